"""Fixtures for the server API suite: a broker with an API key, and a checked client whose
every answer is validated against docs/api/openapi.yaml."""

import pytest

from broker import API_KEY, Broker
from openapi_check import validate_answer


class CheckedBroker:
    """The broker's HTTP side, validating every answer against the OpenAPI document."""

    def __init__(self, broker):
        self.broker = broker

    def request(self, method, path, body=None, **kwargs):
        status, _, answer = self.exchange(method, path, body, **kwargs)
        return status, answer

    def exchange(self, method, path, body=None, **kwargs):
        """The request, validated; returns (status, headers, parsed JSON)."""
        status, headers, answer = self.broker.exchange(method, path, body, **kwargs)
        validate_answer(path, method, status, headers.get("Content-Type"), answer, headers)
        return status, headers, answer

    def api(self, op, body=None, **kwargs):
        return self.request("POST", f"/api/v1/{op}", {} if body is None else body, **kwargs)

    def ok(self, op, body=None):
        status, answer = self.api(op, body)
        assert status == 200 and answer["ok"] is True, answer
        return answer["result"]

    def error(self, op, body, status, code, **kwargs):
        got_status, answer = self.api(op, body, **kwargs)
        assert (got_status, answer["error"]["code"]) == (status, code), answer
        return answer


@pytest.fixture
def broker():
    process = Broker()
    yield process
    assert process.stop() == 0, "".join(process.stderr_lines)


@pytest.fixture
def api(broker):
    return CheckedBroker(broker)


@pytest.fixture
def key():
    return API_KEY
