"""Validates every answer the tests receive against docs/api/openapi.yaml: the status must be
documented for the operation (a method the path does not declare: 405, the shared
`MethodNotAllowed` response), the content type JSON, the declared headers present and valid,
and the body must match the response schema (JSON Schema 2020-12, as OpenAPI 3.1 uses; `$ref`s
resolve inside the document)."""

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


#: The answer to every method a path does not declare (only POST is): one shared response.
METHOD_NOT_ALLOWED = {"$ref": "#/components/responses/MethodNotAllowed"}


def _documented_path(path):
    return path if path in SPEC["paths"] else "/api/v1/{op}"


def validate_answer(path, method, status, content_type, body, headers=None):
    """Raises AssertionError when the answer does not match the document. `headers` (a
    mapping with case-insensitive `get`, when given) are checked against the response's
    declared headers."""
    method = method.lower()
    documented_path = _documented_path(path)
    operation = SPEC["paths"][documented_path].get(method)
    if operation is None:
        assert status == 405, f"{method.upper()} {path}: an undeclared method answered {status}, not 405"
        responses = {"405": METHOD_NOT_ALLOWED}
    else:
        responses = operation["responses"]
    assert str(status) in responses, f"{method.upper()} {path}: status {status} is not documented"
    pointer = "/paths/" + _escape(documented_path) + "/" + method + "/responses/" + str(status)
    response = responses[str(status)]
    if "$ref" in response:
        pointer = response["$ref"][1:]
        response = REGISTRY.resolver(BASE).lookup(BASE + "#" + pointer).contents
    assert content_type and content_type.split(";")[0].strip() == "application/json", \
        f"{method.upper()} {path}: content type {content_type}"
    for name, header in response.get("headers", {}).items():
        if headers is None:
            continue
        value = headers.get(name)
        assert value is not None or not header.get("required"), f"{method.upper()} {path} {status}: no {name} header"
        if value is not None:
            errors = list(jsonschema.Draft202012Validator(header["schema"]).iter_errors(value))
            assert not errors, f"{method.upper()} {path} {status}: {name}: {errors[0].message}"
    schema_pointer = pointer + "/content/application~1json/schema"
    validator = jsonschema.Draft202012Validator({"$ref": BASE + "#" + schema_pointer}, registry=REGISTRY)
    errors = sorted(validator.iter_errors(body), key=lambda e: e.path)
    assert not errors, f"{method.upper()} {path} {status}: {errors[0].message} in {body}"
    SEEN.add((documented_path, method, status))
