"""A minimal synchronous WebSocket client of the broker (PROTOCOL §2): requests with ids,
replies matched by id, events kept in order, frames split on newlines."""

import itertools
import json
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


class Client:
    def __init__(self, url, user, compression="deflate", **login):
        """Connects and logs `user` in; `login` adds arguments (`token`, `platform`, …)."""
        self.socket = connect(url, subprotocols=["rollcall.v1"], open_timeout=10, compression=compression).__enter__()
        self.ids = itertools.count(1)
        self.events = []
        self.replies = {}
        self.close_code = None
        self.close_reason = None
        self.login = self.call("login", **{"userId": user, "platform": "cli", **login})

    def _read(self, timeout):
        try:
            frame = self.socket.recv(timeout=timeout)
        except TimeoutError:
            return False
        except ConnectionClosed as closed:
            received = closed.rcvd
            self.close_code = received.code if received else None
            self.close_reason = received.reason if received else None
            raise
        for line in frame.split("\n"):
            value = json.loads(line)
            if "id" in value and "ok" in value:
                self.replies[value["id"]] = value
            else:
                self.events.append(value)
        return True

    def call(self, op, **arguments):
        request_id = next(self.ids)
        self.socket.send(json.dumps({"id": request_id, "op": op, **arguments}))
        deadline = time.monotonic() + 10
        while request_id not in self.replies:
            assert time.monotonic() < deadline, f"no reply to {op}"
            self._read(deadline - time.monotonic())
        reply = self.replies.pop(request_id)
        assert reply["ok"], reply
        return reply["result"]

    def wait_for_event(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if predicate(event):
                    del self.events[index]
                    return event
            assert time.monotonic() < deadline, f"no such event; got {self.events}"
            self._read(deadline - time.monotonic())

    def wait_for_close(self, timeout=10):
        deadline = time.monotonic() + timeout
        while self.close_code is None:
            assert time.monotonic() < deadline, "not closed"
            try:
                self._read(deadline - time.monotonic())
            except ConnectionClosed:
                break
        return self.close_code, self.close_reason

    def drop(self):
        """Ends the TCP connection without a close frame (the session is held)."""
        self.socket.socket.close()

    def close(self):
        self.socket.close()
