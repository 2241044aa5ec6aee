"""Writing with permessage-deflate on (docs/transport.md, "Writing" and "Compression"): a
connection that negotiated the extension is only written from lws' writable callback, where
lws drains the extension's output first, so compressed messages of any size arrive whole and
in order; a connection that did not offer it is written directly as usual. Both clients are
Python `websockets`, which offers permessage-deflate unless told not to and inflates itself."""

import hashlib
import http.client
import json
import re
import time

import pytest

from broker import Broker
from wsclient import Client

COMPRESSING = {
    "http": {"staticDir": None, "permessageDeflate": True},
    "limits": {"requestsPerSecond": 100000, "requestBurst": 100000},
}


@pytest.fixture
def compressing_broker():
    process = Broker(extra=COMPRESSING)
    yield process
    assert process.stop() == 0


def metric(broker, name):
    connection = http.client.HTTPConnection("127.0.0.1", broker.port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    match = re.search(rf"^{name} (\d+)", text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return int(match.group(1))


def messages(count):
    """Publishable messages from 10 bytes to ~30 KB, each telling its number; the padding is
    hex digests, which compress to about half, so large ones stay larger than the
    extension's output chunk after compression."""
    def pad(n):
        size = (n * 977) % 30000
        digests = "".join(hashlib.sha256(f"{n}:{i}".encode()).hexdigest() for i in range(size // 64 + 1))
        return digests[:size]
    return [{"n": n, "pad": pad(n)} for n in range(count)]


def receive_all(receiver, publisher, count):
    got = []
    while len(got) < count:
        event = receiver.wait_for_event(lambda e: e.get("event") == "message" and e.get("publisher") == publisher)
        got.append(event["message"])
    return got


def test_compressed_connections_get_every_message_whole_and_in_order(compressing_broker):
    publisher = Client(compressing_broker.ws_url, "pub")
    receiver = Client(compressing_broker.ws_url, "sub")
    assert receiver.socket.response.headers.get("Sec-WebSocket-Extensions", "").startswith("permessage-deflate")
    for client in (publisher, receiver):
        client.call("join", channel="room:zip", presence=False)
    direct_before = metric(compressing_broker, "rollcall_direct_writes_total")

    sent = messages(40)
    for message in sent:
        publisher.socket.send(json.dumps({"id": 10_000 + message["n"], "op": "publish", "channel": "room:zip",
                                          "message": message}))
    assert receive_all(receiver, "pub", len(sent)) == sent
    # Every write to these two went through the writable callback.
    assert metric(compressing_broker, "rollcall_direct_writes_total") == direct_before
    # (Not closed: a compressing client that still has unread frames waits 10 s for the
    # broker's answer to its close frame, before this change too; the fixture's SIGTERM ends both.)


def test_a_client_without_the_extension_is_written_directly_beside_compressed_ones(compressing_broker):
    publisher = Client(compressing_broker.ws_url, "pub", compression=None)
    assert publisher.socket.response.headers.get("Sec-WebSocket-Extensions") is None
    compressed = Client(compressing_broker.ws_url, "zip")
    for client in (publisher, compressed):
        client.call("join", channel="room:mixed", presence=False)
    direct_before = metric(compressing_broker, "rollcall_direct_writes_total")

    sent = messages(30)
    for message in sent:
        publisher.call("publish", channel="room:mixed", message=message)
        # Paced as a quiet session (no frame in the last 4 ms coalescing window), whose
        # replies are written at once rather than held for the flush.
        time.sleep(0.01)
    assert receive_all(compressed, "pub", len(sent)) == sent
    # The plain client's replies were written at once, the compressed client's events not.
    assert metric(compressing_broker, "rollcall_direct_writes_total") >= direct_before + len(sent)
    compressed.drop()
    publisher.close()
