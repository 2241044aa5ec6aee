"""Validates every answer the tests receive against docs/api/openapi.yaml: the status must be
documented for the operation, the content type JSON, and the body must match the response
schema (JSON Schema 2020-12, as OpenAPI 3.1 uses; `$ref`s resolve inside the document)."""

import pathlib

import jsonschema
import referencing
import yaml
from openapi_spec_validator import validate as validate_spec

ROOT = pathlib.Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / "docs" / "api" / "openapi.yaml"
SPEC = yaml.safe_load(SPEC_PATH.read_text())
BASE = "urn:rollcall:openapi"
REGISTRY = referencing.Registry().with_resource(
    BASE, referencing.Resource(contents=SPEC, specification=referencing.jsonschema.DRAFT202012))

#: Every (path, method, status) checked so far, for the coverage test.
SEEN = set()


def check_spec():
    """The document itself is a valid OpenAPI 3.1 document."""
    validate_spec(SPEC)


def _escape(token):
    return token.replace("~", "~0").replace("/", "~1")


def _operation(path, method):
    if path in SPEC["paths"] and method in SPEC["paths"][path]:
        return path, SPEC["paths"][path][method]
    template = "/api/v1/{op}"
    return template, SPEC["paths"][template][method]


def validate_answer(path, method, status, content_type, body):
    """Raises AssertionError when the answer does not match the document."""
    method = method.lower()
    documented_path, operation = _operation(path, method)
    responses = operation["responses"]
    assert str(status) in responses, f"{method.upper()} {path}: status {status} is not documented"
    pointer = "/paths/" + _escape(documented_path) + "/" + method + "/responses/" + str(status)
    response = responses[str(status)]
    if "$ref" in response:
        pointer = response["$ref"][1:]
        response = REGISTRY.resolver(BASE).lookup(BASE + "#" + pointer).contents
    assert content_type and content_type.split(";")[0].strip() == "application/json", \
        f"{method.upper()} {path}: content type {content_type}"
    schema_pointer = pointer + "/content/application~1json/schema"
    validator = jsonschema.Draft202012Validator({"$ref": BASE + "#" + schema_pointer}, registry=REGISTRY)
    errors = sorted(validator.iter_errors(body), key=lambda e: e.path)
    assert not errors, f"{method.upper()} {path} {status}: {errors[0].message} in {body}"
    SEEN.add((documented_path, method, status))
