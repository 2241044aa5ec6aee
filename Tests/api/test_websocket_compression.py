"""Writing with permessage-deflate on (docs/transport.md, "Writing" and "Compression"): a
connection that negotiated the extension is only written from lws' writable callback, where
lws drains the extension's output first, so compressed messages of any size arrive whole and
in order; a connection that did not offer it is written directly as usual. Both clients are
Python `websockets`, which offers permessage-deflate unless told not to and inflates itself."""

import base64
import hashlib
import os
import select
import socket
import struct
import http.client
import json
import re
import time
import zlib

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
    # (Not closed with `close()`: Python `websockets`' sync client stops reading once 16 frames
    # wait unread and its close() does not read again, so it would wait its 10 s close timeout
    # for the broker's close frame, which is already in its socket; see the test below.)


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


def raw_compressing_socket(broker):
    """A WebSocket that offers permessage-deflate and reads only when told (no client-side
    flow control); returns the socket once upgraded."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:{broker.port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  "Sec-WebSocket-Protocol: rollcall.v1\r\n"
                  "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n").encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    assert b"sec-websocket-extensions: permessage-deflate" in head.lower()
    return sock


def send_frame(sock, opcode, payload):
    mask = os.urandom(4)
    length = len(payload)
    header = bytes([0x80 | opcode]) + (bytes([0x80 | length]) if length < 126 else bytes([0x80 | 126]) + struct.pack("!H", length))
    sock.sendall(header + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload)))


def read_messages(sock, inflater, count, deadline):
    """Reads `count` whole messages (text, inflated when RSV1 says compressed) byte by byte,
    so nothing after them is consumed."""
    def exactly(n):
        data = b""
        while len(data) < n:
            assert time.monotonic() < deadline, "no reply in time"
            data += sock.recv(n - len(data))
        return data
    texts = []
    while len(texts) < count:
        parts, compressed = [], False
        while True:
            first, second = exactly(2)
            compressed = compressed or bool(first & 0x40)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", exactly(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", exactly(8))[0]
            parts.append(exactly(length))
            if first & 0x80:
                break
        payload = b"".join(parts)
        texts.append((inflater.decompress(payload + b"\x00\x00\xff\xff") if compressed else payload).decode())
    return texts


def frames_until_eof(sock, deadline):
    """(opcode, payload) of every frame the broker sends until it closes the TCP connection,
    reading as fast as they come; fails at `deadline` (monotonic)."""
    data = b""
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "the broker did not close the connection in time"
        if not select.select([sock], [], [], remaining)[0]:
            continue
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    frames, offset = [], 0
    while offset < len(data):
        opcode, length = data[offset] & 0x0F, data[offset + 1] & 0x7F
        offset += 2
        if length == 126:
            length, offset = struct.unpack_from("!H", data, offset)[0], offset + 2
        elif length == 127:
            length, offset = struct.unpack_from("!Q", data, offset)[0], offset + 8
        frames.append((opcode, data[offset:offset + length]))
        offset += length
    return frames


def test_a_compressing_client_with_unread_frames_gets_the_answer_to_its_close_frame_at_once(compressing_broker):
    """A client that negotiated permessage-deflate, left a few hundred KB of compressed
    messages unread (some still in lws' deflate drain) and sends a close frame: the broker
    answers it at once (behind the data it already wrote) and closes the TCP connection."""
    publisher = Client(compressing_broker.ws_url, "pub", compression=None)
    publisher.call("join", channel="room:unread", presence=False)
    receiver = raw_compressing_socket(compressing_broker)
    send_frame(receiver, 0x1, json.dumps({"id": 1, "op": "login", "userId": "sub", "platform": "cli"}).encode())
    send_frame(receiver, 0x1, json.dumps({"id": 2, "op": "join", "channel": "room:unread", "presence": False}).encode())
    inflater = zlib.decompressobj(-15)
    replies = read_messages(receiver, inflater, count=2, deadline=time.monotonic() + 10)
    assert [json.loads(reply)["id"] for reply in replies] == [1, 2] and all(json.loads(r)["ok"] for r in replies)
    for message in messages(60):
        publisher.socket.send(json.dumps({"id": 10_000 + message["n"], "op": "publish", "channel": "room:unread",
                                          "message": message}))
    publisher.call("join", channel="room:other", presence=False)  # every publish above was handled

    started = time.monotonic()
    send_frame(receiver, 0x8, struct.pack("!H", 1000))
    frames = frames_until_eof(receiver, deadline=started + 5)
    elapsed = time.monotonic() - started
    receiver.close()
    # Compressed data the client had not read was still on its way when the close frame went.
    assert len(frames) > 1 and all(opcode in (0x0, 0x1) for opcode, _ in frames[:-1])
    assert frames and frames[-1][0] == 0x8, [opcode for opcode, _ in frames[-5:]]
    assert struct.unpack("!H", frames[-1][1][:2])[0] == 1000
    assert elapsed < 2, f"close handshake took {elapsed:.1f} s"
    publisher.close()
