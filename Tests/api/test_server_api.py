"""The server API (PROTOCOL §10) against the real broker binary: every op, every error status,
each answer validated against docs/api/openapi.yaml (conftest's CheckedBroker)."""

import http.client
import json
import socket

import pytest

from broker import Broker
from conftest import CheckedBroker
from openapi_check import SEEN, SPEC, check_spec
from wsclient import Client

OPS = ["publish", "getOnlineUsers", "getState", "getUserChannels", "getUserStatus", "getChannels",
       "disconnectUser", "getInfo"]


def test_the_document_is_valid_openapi_31():
    check_spec()
    assert SPEC["openapi"].startswith("3.1")
    for op in OPS:
        assert f"/api/v1/{op}" in SPEC["paths"]


def test_publish_from_the_server_reaches_members_with_the_given_publisher(api, broker):
    bob = Client(broker.ws_url, "bob")
    bob.call("join", channel="room")
    bob.call("join", channel="live", channelType="stream")
    assert api.ok("publish", {"channel": "room", "message": {"text": "hello"}}) == {"recipients": 1}
    event = bob.wait_for_event(lambda e: e.get("event") == "message")
    assert event["publisher"] == "server" and event["message"] == {"text": "hello"}
    result = api.ok("publish", {"channel": "live", "channelType": "stream", "message": 7, "publisher": "ops-bot"})
    assert result == {"recipients": 1}
    assert bob.wait_for_event(lambda e: e.get("event") == "message")["publisher"] == "ops-bot"
    assert api.ok("publish", {"channel": "nobody", "message": None}) == {"recipients": 0}
    api.error("publish", {"channel": "room", "message": 1, "publisher": ""}, 400, "INVALID_ARGUMENT")
    api.error("publish", {"channel": "room", "message": "x" * 40000}, 400, "MESSAGE_TOO_LARGE")
    api.error("publish", {"channel": "room"}, 400, "INVALID_REQUEST")
    bob.close()


def test_reads_answer_as_over_websocket_and_get_online_users_has_seq(api, broker):
    bob = Client(broker.ws_url, "bob")
    alice = Client(broker.ws_url, "alice")
    bob.call("join", channel="room", state={"mood": "ok"})
    alice.call("join", channel="room")
    for op, body in [("getOnlineUsers", {"channel": "room", "includeState": True}),
                     ("getOnlineUsers", {"channel": "room", "pageSize": 1}),
                     ("getOnlineUsers", {"channel": "empty"}),
                     ("getState", {"channel": "room", "userId": "bob"}),
                     ("getUserChannels", {"userId": "bob"})]:
        assert api.ok(op, body) == alice.call(op, **body), op
    users = api.ok("getOnlineUsers", {"channel": "room"})
    assert users["seq"] == 2 and users["totalOccupancy"] == 2
    assert [u["userId"] for u in users["users"]] == ["alice", "bob"]
    assert api.ok("getOnlineUsers", {"channel": "empty"})["seq"] == 0
    api.error("getState", {"channel": "room", "userId": "zed"}, 400, "USER_NOT_PRESENT")
    api.error("getOnlineUsers", {"channel": "room", "pageSize": 0}, 400, "INVALID_ARGUMENT")
    api.error("getOnlineUsers", {"channel": "room", "includeUserId": False, "includeState": True}, 400, "INVALID_ARGUMENT")
    statuses = api.ok("getUserStatus", {"userIds": ["bob", "carol", ""]})
    assert [s["status"] for s in statuses["statuses"]] == ["online", "loggedOut"]
    assert statuses["failed"] == [{"userId": "", "code": "INVALID_ARGUMENT"}]
    api.error("getUserStatus", {"userIds": [f"u{i}" for i in range(501)]}, 400, "TOO_MANY_USERS")
    bob.close()
    alice.close()


def test_get_channels_pages_with_a_prefix(api, broker):
    bob = Client(broker.ws_url, "bob")
    names = [f"room:{i:03d}" for i in range(25)]
    for name in names:
        bob.call("join", channel=name)
    bob.call("join", channel="other")
    bob.call("join", channel="room:zz", channelType="stream")
    seen, page, pages = [], None, 0
    while True:
        body = {"prefix": "room:", "pageSize": 10}
        if page:
            body["page"] = page
        result = api.ok("getChannels", body)
        seen += [(c["channel"], c["channelType"]) for c in result["channels"]]
        pages += 1
        page = result["nextPage"]
        if page is None:
            break
    assert seen == [(n, "message") for n in names] + [("room:zz", "stream")]
    assert pages == 3
    first = api.ok("getChannels", {"pageSize": 1})["channels"][0]
    assert first == {"channel": "other", "channelType": "message", "occupancy": 1, "mode": "announce", "seq": 1}
    api.error("getChannels", {"page": "not-a-cursor"}, 400, "INVALID_ARGUMENT")
    api.error("getChannels", {"pageSize": 1001}, 400, "INVALID_ARGUMENT")
    api.error("getChannels", {"prefix": 3}, 400, "INVALID_REQUEST")
    bob.close()


def test_disconnect_user_closes_with_4403_and_others_see_leave(api, broker):
    bob = Client(broker.ws_url, "bob")
    alice = Client(broker.ws_url, "alice")
    bob.call("join", channel="room")
    alice.call("join", channel="room")
    assert api.ok("disconnectUser", {"userId": "bob", "reason": "banned"}) == {"sessions": 1}
    assert bob.wait_for_close() == (4403, "banned")
    leave = alice.wait_for_event(lambda e: e.get("event") == "presence" and e.get("type") == "leave")
    assert leave["publisher"] == "bob"
    assert api.ok("getUserStatus", {"userIds": ["bob"]})["statuses"][0]["status"] == "loggedOut"
    assert api.ok("disconnectUser", {"userId": "nobody"}) == {"sessions": 0}
    api.error("disconnectUser", {"userId": "bob", "reason": "r" * 124}, 400, "INVALID_ARGUMENT")
    api.error("disconnectUser", {}, 400, "INVALID_REQUEST")
    alice.close()


def test_get_info_counts_sessions_and_channels(api, broker):
    assert api.ok("getInfo") == {"version": "1.2.0", "nodes": [{"nodeId": "standalone", "sessions": 0}],
                                 "channels": 0, "sessions": 0}
    bob = Client(broker.ws_url, "bob")
    bob.call("join", channel="a")
    info = api.ok("getInfo")
    assert (info["sessions"], info["channels"], info["nodes"][0]["sessions"]) == (1, 1, 1)
    bob.close()


def test_every_error_status(api, broker, key):
    # 400: not JSON, not an object.
    status, answer = api.request("POST", "/api/v1/getInfo", "{")
    assert (status, answer["error"]["code"]) == (400, "INVALID_JSON")
    status, answer = api.request("POST", "/api/v1/getInfo", "[1,2]")
    assert (status, answer["error"]["code"]) == (400, "INVALID_REQUEST")
    # An empty body is {}.
    status, _ = api.request("POST", "/api/v1/getInfo", b"")
    assert status == 200
    # 401: no key, a wrong key, another scheme.
    for headers in [{"Authorization": "Bearer wrong-key-0123456789"}, {"Authorization": f"Basic {key}"}]:
        status, answer = api.request("POST", "/api/v1/getInfo", {}, key=None, headers=headers)
        assert (status, answer["error"]["code"]) == (401, "UNAUTHORIZED")
    status, answer = api.request("POST", "/api/v1/getInfo", {}, key=None)
    assert (status, answer["error"]["code"]) == (401, "UNAUTHORIZED")
    # 404: an unknown op, a WebSocket-only op.
    for op in ["nope", "join"]:
        status, answer = api.request("POST", f"/api/v1/{op}", {})
        assert (status, answer["error"]["code"]) == (404, "UNKNOWN_OP")
    # 405 with Allow: POST: any other method, with a key or without one, on every API path.
    for method in ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"]:
        for path, credentials in [("/api/v1/getInfo", key), ("/api/v1/getInfo", None), ("/api/v1/nope", None)]:
            status, headers, answer = api.exchange(method, path, key=credentials)
            assert (status, answer["error"]["code"], headers.get("Allow")) == (405, "INVALID_REQUEST", "POST"), method
    # 413: a body over limits.maxFrameBytes (65536), refused without being buffered.
    status, answer = api.request("POST", "/api/v1/publish", b" " * 70000)
    assert (status, answer["error"]["code"]) == (413, "MESSAGE_TOO_LARGE")
    # The broker still answers.
    assert api.ok("getInfo")["sessions"] == 0


def test_a_declared_huge_body_is_refused_at_once_without_sending_it(broker, key):
    """413 comes from the Content-Length alone: the client never has to send the body."""
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
        raw.sendall((f"POST /api/v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                     "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += raw.recv(4096)
        head, _, rest = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 413")
        length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
        while len(rest) < length:
            rest += raw.recv(4096)
        from openapi_check import validate_answer
        validate_answer("/api/v1/publish", "post", 413, "application/json", json.loads(rest[:length]))


def test_a_client_that_hangs_up_does_not_disturb_the_broker(broker, key):
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
        raw.sendall((f"POST /api/v1/getInfo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                     "Content-Length: 10\r\n\r\n{}").encode())
    api = CheckedBroker(broker)
    assert api.ok("getInfo")["nodes"][0]["nodeId"] == "standalone"


def test_keep_alive_serves_several_requests_on_one_connection(broker, key):
    connection = http.client.HTTPConnection("127.0.0.1", broker.port, timeout=10)
    for op in ["getInfo", "getChannels", "getInfo"]:
        connection.request("POST", f"/api/v1/{op}", body=b"{}", headers={"Authorization": f"Bearer {key}"})
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["ok"] is True
    connection.close()


def test_without_a_configured_key_the_api_answers_401():
    off = Broker(api={})
    try:
        api = CheckedBroker(off)
        for key in ["anything-0123456789", "", None]:
            status, answer = api.api("getInfo", {}, key=key)
            assert (status, answer["error"]["code"]) == (401, "UNAUTHORIZED")
    finally:
        assert off.stop() == 0


def test_the_key_may_come_from_the_environment():
    from_env = Broker(api={"keyEnv": "MY_ROLLCALL_KEY"}, env={"MY_ROLLCALL_KEY": "env-key-0123456789abc"})
    try:
        api = CheckedBroker(from_env)
        assert api.api("getInfo", {}, key="env-key-0123456789abc")[0] == 200
        assert api.api("getInfo", {}, key="test-key-0123456789abcdef")[0] == 401
    finally:
        assert from_env.stop() == 0


def test_every_documented_status_was_seen():
    """Runs last (file order): every op's 200, and every error status of the document."""
    if not SEEN:
        pytest.skip("run with the rest of the file: it checks what the other tests saw")
    statuses = {(path, method, status) for path, method, status in SEEN}
    for op in OPS:
        assert (f"/api/v1/{op}", "post", 200) in statuses, op
    seen_codes = {status for _, _, status in statuses}
    for status in [200, 400, 401, 404, 405, 413]:
        assert status in seen_codes, status


def test_a_body_on_a_method_that_takes_none_closes_the_connection_after_the_answer(broker, key):
    """OPTIONS/DELETE/GET with a body: answered 405 without reading it, then the connection
    closes (its unread bytes once sent lws into a busy loop on the next request)."""
    for method in [b"OPTIONS", b"DELETE", b"GET"]:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
            raw.sendall(method + b" /api/v1/getInfo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
            data = b""
            while True:
                chunk = raw.recv(4096)
                if not chunk:
                    break
                data += chunk
            assert data.startswith(b"HTTP/1.1 405"), data
    api = CheckedBroker(broker)
    for _ in range(3):
        assert api.ok("getInfo")["sessions"] == 0


def _request_schema(op):
    """The request body schema of `op` in the document, `$ref` resolved."""
    body = SPEC["paths"][f"/api/v1/{op}"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return SPEC["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]


def test_a_body_holds_exactly_the_members_the_document_lists(api):
    """Every member the document lists is taken (an optional one as null, which counts as
    absent); a member it does not list is 400 INVALID_REQUEST; every request schema says
    additionalProperties: false."""
    required = {"publish": {"channel": "room", "message": 1}, "getOnlineUsers": {"channel": "room"},
                "getState": {"channel": "room", "userId": "bob"}, "getUserChannels": {"userId": "bob"},
                "getUserStatus": {"userIds": ["bob"]}, "getChannels": {}, "disconnectUser": {"userId": "nobody"},
                "getInfo": {}}
    for op in OPS:
        schema = _request_schema(op)
        assert schema.get("additionalProperties") is False, op
        body = dict(required[op])
        for name in schema.get("properties", {}):
            body.setdefault(name, None)
        status, answer = api.api(op, body)
        assert status == 200 or answer["error"]["code"] == "USER_NOT_PRESENT", (op, answer)
        status, answer = api.api(op, {**required[op], "pagesize": 10})
        assert (status, answer["error"]["code"]) == (400, "INVALID_REQUEST"), op
        assert "pagesize" in answer["error"]["message"]


def test_cursors_match_the_documented_patterns(api, broker):
    """Every nextPage matches its pattern (checked on each answer by the document); a
    pattern-valid cursor of a name nobody has is taken; a cursor of the other listing, or
    one outside the pattern, is refused."""
    import re
    schemas = SPEC["components"]["schemas"]
    user_page, channel_page = re.compile(schemas["UserPage"]["pattern"]), re.compile(schemas["ChannelPage"]["pattern"])
    bob = Client(broker.ws_url, "bob")
    for name in ["a", "é", "日本", "🙂x"]:
        bob.call("join", channel=name)
    cursors = []
    page = None
    while True:
        result = api.ok("getChannels", {"pageSize": 1, "page": page})
        page = result["nextPage"]
        if page is None:
            break
        cursors.append(page)
        assert channel_page.fullmatch(page) and not user_page.fullmatch(page), page
    assert len(cursors) == 3
    users = api.ok("getOnlineUsers", {"channel": "a", "pageSize": 1, "page": "u1.7a"})
    assert users["users"] == [] and users["nextPage"] is None
    assert api.ok("getChannels", {"page": "c1.s.7a"})["channels"] == []
    for cursor in ["u1.61", "c1.m.", "c1.m.6", "c1.m.00", "c1.m.c0af", "c1.m.6A", "x"]:
        assert not channel_page.fullmatch(cursor), cursor
        api.error("getChannels", {"page": cursor}, 400, "INVALID_ARGUMENT")
    for cursor in ["c1.m.61", "u1.", "u1.ed a080", "u1.eda080"]:
        assert not user_page.fullmatch(cursor), cursor
        api.error("getOnlineUsers", {"channel": "a", "page": cursor}, 400, "INVALID_ARGUMENT")
    bob.close()
