#!/usr/bin/env python3
"""Where the Redis time of a cluster op's script goes before its body (BENCHMARKS.md, "Issue 30
item 4", "Session 49").

Starts its own redis-server (a free loopback port, no persistence) and one `rollcall` node in
cluster mode, fills one channel with MEMBERS members (presence on), then one more session joins
it with messages, sets its state and publishes 100 bytes. MONITOR captures the three scripts as
the node loads them (SCRIPT LOAD) and the arguments of those three calls. Then, with the node
stopped (SIGSTOP, so that only this runs on Redis), it replays 6000 EVALSHA calls (20 writes of
300), three times, of each variant, with the op's own arguments, and prints Redis' CPU per call
(schedstat of every redis-server thread, idle rate subtracted):

  - `return 1` (the cost of the call and of passing the arguments);
  - the script's parameter locals only (cut where its library starts);
  - the script cut where its body starts (the library's definitions and what it runs);
  - the same without the presence library's `HSETNX ih` and `TIME`, where it has them.

Usage: script-prologue-parts.py <release rollcall binary> <members>    (needs redis-server,
redis-cli and Python's `websockets`). Every process it starts is stopped by its own handle.
"""
import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import websockets

ROUNDS, BATCH, REPEATS = 20, 300, 3
# Where each op's body starts (the publish body's first line changed in session 49).
BODY_MARKERS = {
    "join": (b"-- Fencing: only the node that owns the session joins",),
    "setState": (b"-- Fencing, for a client's own change (`node` given",),
    "publish": (b"-- A member's publish: the channel has members", b"if requireMember == '1' and not"),
}
HSETNX_LINE = b"if intervalHead ~= '' then redis.call('HSETNX', ch.base, 'ih', intervalHead) end"
TIME_LINE = b"local clock = redis.call('TIME')"
# The lines before a script's library: the link's prelude and the generated parameter locals.
PROLOGUE_LINE = re.compile(rb"^local \w+ = (KEYS\[\d+\]|ARGV\[\d+\]|tonumber\(ARGV\[\d+\]\)|\d+|'S?PUBLISH')$")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def resp(command):
    out = b"*%d\r\n" % len(command)
    for argument in command:
        out += b"$%d\r\n%s\r\n" % (len(argument), argument)
    return out


def reply_end(data, start):
    """The index after the RESP reply that starts at `start`, or None when it is incomplete."""
    line = data.find(b"\r\n", start)
    if line < 0:
        return None
    kind, value = data[start:start + 1], data[start + 1:line]
    if kind in (b"+", b"-", b":"):
        return line + 2
    if kind == b"$":
        length = int(value)
        end = line + 2 + max(length, 0) + (2 if length >= 0 else 0)
        return end if len(data) >= end else None
    if kind == b"*":
        cursor = line + 2
        for _ in range(max(int(value), 0)):
            cursor = reply_end(data, cursor)
            if cursor is None:
                return None
        return cursor
    raise ValueError(f"unreadable reply: {data[start:start + 40]!r}")


class Pipe:
    """A blocking Redis connection that writes a batch of commands at once and reads every reply."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buffer = b""

    def call(self, commands):
        self.sock.sendall(b"".join(resp(command) for command in commands))
        replies = []
        while len(replies) < len(commands):
            end = reply_end(self.buffer, 0)
            if end is None:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("Redis closed the connection")
                self.buffer += chunk
                continue
            replies.append(self.buffer[:end])
            self.buffer = self.buffer[end:]
        return replies


def cpu_seconds(pid):
    total = 0
    for thread in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{thread}/schedstat") as stat:
            total += int(stat.read().split()[0])
    return total / 1e9


MONITOR_ARGUMENT = re.compile(rb'"((?:[^"\\]|\\.)*)"')


def unescape(text):
    """An argument as redis-cli MONITOR prints it (C escapes), back to its bytes."""
    out, index = bytearray(), 0
    simple = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("a"): 7, ord("b"): 8}
    while index < len(text):
        if text[index] == 0x5C:
            code = text[index + 1]
            if code == ord("x"):
                out.append(int(text[index + 2:index + 4], 16))
                index += 4
            else:
                out.append(simple.get(code, code))
                index += 2
        else:
            out.append(text[index])
            index += 1
    return bytes(out)


async def fill(url, members):
    async def member(number):
        connection = await websockets.connect(url, max_size=None)
        for request_id, op, arguments in [(1, "login", {"userId": f"m{number:05d}"}),
                                          (2, "join", {"channel": "c", "messages": False})]:
            await connection.send(json.dumps({"id": request_id, "op": op, **arguments}))
            answered = False
            while not answered:
                for line in (await connection.recv()).split("\n"):
                    if line.strip() and json.loads(line).get("id") == request_id:
                        answered = True
        return connection

    connections = []
    for start in range(0, members, 50):
        connections += await asyncio.gather(*[member(n) for n in range(start, min(members, start + 50))])
    return connections


async def last_member_ops(url):
    """One more session: joins with messages, sets its state, publishes 100 bytes."""
    connection = await websockets.connect(url, max_size=None)

    async def ask(request_id, op, arguments):
        await connection.send(json.dumps({"id": request_id, "op": op, **arguments}))
        while True:
            for line in (await connection.recv()).split("\n"):
                if line.strip() and json.loads(line).get("id") == request_id:
                    reply = json.loads(line)
                    if reply.get("ok") is False:
                        raise RuntimeError(f"{op}: {reply}")
                    return

    await ask(1, "login", {"userId": "zz-last"})
    await ask(2, "join", {"channel": "c", "messages": True})
    await ask(3, "setState", {"channel": "c", "state": {"mood": "busy"}})
    await ask(4, "publish", {"channel": "c", "message": "x" * 100})
    return connection


def library_start(text):
    """The index where the script's library starts: after its prelude and parameter locals."""
    offset = 0
    for line in text.split(b"\n"):
        if not PROLOGUE_LINE.match(line):
            return offset
        offset += len(line) + 1
    return offset


def cut_at(text, index):
    return text[:index] + b"do return 1 end\n" + text[index:]


def variants(op, text):
    marker = next(marker for marker in BODY_MARKERS[op] if marker in text)
    body = text.index(marker)
    out = [("return 1 with the op's arguments", b"return 1"),
           ("parameter locals only", cut_at(text, library_start(text))),
           ("cut where the body starts (library defined and run)", cut_at(text, body))]
    if HSETNX_LINE in text and TIME_LINE in text:
        plain = text.replace(HSETNX_LINE, b"").replace(TIME_LINE, b"local clock = {'1', '2'}")
        out.append(("the same without HSETNX ih and TIME", cut_at(plain, plain.index(marker))))
    return out


def main():
    binary, members = sys.argv[1], int(sys.argv[2])
    directory = tempfile.mkdtemp(prefix="rollcall-script-parts-")
    redis_port = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", directory], stdout=subprocess.DEVNULL)
    monitor = node = None
    try:
        def answers_ping():
            try:
                probe = Pipe(redis_port)
            except OSError:
                return False
            answered = probe.call([[b"PING"]])[0] == b"+PONG\r\n"
            probe.sock.close()
            return answered
        wait_until(answers_ping, 10, "redis-server")
        monitor_file = os.path.join(directory, "monitor.txt")
        with open(monitor_file, "wb") as monitor_out:
            monitor = subprocess.Popen(["redis-cli", "-p", str(redis_port), "MONITOR"], stdout=monitor_out)
        wait_until(lambda: os.path.getsize(monitor_file) > 0, 10, "MONITOR")
        config = {"listen": {"host": "127.0.0.1", "port": 0}, "storage": {"path": None}, "log": {"level": "error"},
                  "cluster": {"redis": f"redis://127.0.0.1:{redis_port}", "keyPrefix": "bench:",
                              "heartbeatSeconds": 0.2, "nodeTimeoutSeconds": 1},
                  "presence": {"maxInstantEvents": 100, "hysteresis": 10, "intervalSeconds": 1, "timeoutSeconds": 2,
                               "snapshotMaxMembers": 2000},
                  "limits": {"requestsPerSecond": 100000, "requestBurst": 100000, "maxChannelsPerSession": 256}}
        config_file = os.path.join(directory, "node.json")
        with open(config_file, "w") as out:
            json.dump(config, out)
        node = subprocess.Popen([binary, "--config", config_file, "--port", "0"], stdout=subprocess.PIPE, text=True)
        port = None
        while port is None:
            line = node.stdout.readline()
            if not line:
                raise RuntimeError("the node exited before listening")
            if line.startswith("listening on "):
                port = int(line.strip().split(":")[-1])
        loop = asyncio.new_event_loop()
        url = f"ws://127.0.0.1:{port}/v1"
        connections = loop.run_until_complete(fill(url, members))
        connections.append(loop.run_until_complete(last_member_ops(url)))
        probe = Pipe(redis_port)
        # MONITOR has printed the publish once the message counter moved.
        wait_until(lambda: probe.call([[b"HGET", b"bench:{0}c:m:1:c", b"mq"]])[0] != b"$-1\r\n", 10, "the publish")
        monitor.terminate()
        monitor.wait()
        texts, calls = {}, {}
        with open(monitor_file, "rb") as lines:
            for line in lines:
                if b"[0 lua]" in line:
                    continue
                arguments = [unescape(a) for a in MONITOR_ARGUMENT.findall(line)]
                if len(arguments) > 2 and arguments[:2] == [b"SCRIPT", b"LOAD"]:
                    for op, markers in BODY_MARKERS.items():
                        if any(marker in arguments[2] for marker in markers):
                            texts[op] = arguments[2]
                if arguments and arguments[0] == b"EVALSHA":
                    for op, text in texts.items():
                        if arguments[1] == hashlib.sha1(text).hexdigest().encode():
                            calls[op] = arguments[2:]
        missing = [op for op in BODY_MARKERS if op not in texts or op not in calls]
        if missing:
            raise RuntimeError(f"no script or call captured for {missing}")
        node.send_signal(signal.SIGSTOP)
        start_cpu, start = cpu_seconds(redis.pid), time.monotonic()
        time.sleep(1)
        idle = (cpu_seconds(redis.pid) - start_cpu) / (time.monotonic() - start)
        print(f"members {members}; redis idle {idle * 1e3:.2f} ms/s")
        for op in BODY_MARKERS:
            text, arguments = texts[op], calls[op]
            print(f"{op}: script {len(text)} bytes, {len(arguments)} arguments after the SHA-1 "
                  f"({sum(map(len, arguments))} bytes)")
            for name, variant in variants(op, text):
                loaded = probe.call([[b"SCRIPT", b"LOAD", variant]])[0]
                command = [b"EVALSHA", loaded.split(b"\r\n")[1]] + arguments
                first = probe.call([command])[0]
                if first.startswith(b"-"):
                    raise RuntimeError(f"{op}, {name}: {first!r}")
                figures = []
                for _ in range(REPEATS):
                    start_cpu, start = cpu_seconds(redis.pid), time.monotonic()
                    for _ in range(ROUNDS):
                        probe.call([command] * BATCH)
                    elapsed = time.monotonic() - start
                    figures.append((cpu_seconds(redis.pid) - start_cpu - idle * elapsed) / (ROUNDS * BATCH) * 1e6)
                print(f"  {name}: " + ", ".join(f"{figure:.1f}" for figure in figures) + " µs per call (Redis CPU)")
        node.send_signal(signal.SIGCONT)

        async def close_all():
            await asyncio.gather(*(connection.close() for connection in connections))
        loop.run_until_complete(close_all())
        loop.close()
    finally:
        for process in (monitor, node, redis):
            if process and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
                process.wait()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
