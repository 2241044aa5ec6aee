"""The harness both script tools share (join-script-parts.py, script-prologue-parts.py): a
redis-server and one `rollcall` node in cluster mode on free loopback ports, MONITOR on Redis,
a channel filled with members, and a blocking pipelined Redis connection for replays.
"""
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import websockets


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


class Bed:
    """redis-server (no persistence), MONITOR writing to a file, and one node on that Redis
    (`keyPrefix` `bench:`, one key group: channel `c` is `bench:{0}c:m:1:c`), filled with
    `members` members of channel `c`. Use as a context manager: everything it started is
    stopped on the way out."""

    CHANNEL = b"bench:{0}c:m:1:c"

    def __init__(self, binary, members, label):
        self.binary, self.members = binary, members
        self.directory = tempfile.mkdtemp(prefix=f"rollcall-{label}-")
        self.redis = self.monitor = self.node = None
        self.connections, self.loop = [], None

    def __enter__(self):
        self.redis_port = free_port()
        self.redis = subprocess.Popen(["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", self.directory], stdout=subprocess.DEVNULL)

        def answers_ping():
            try:
                probe = Pipe(self.redis_port)
            except OSError:
                return False
            answered = probe.call([[b"PING"]])[0] == b"+PONG\r\n"
            probe.sock.close()
            return answered
        wait_until(answers_ping, 10, "redis-server")
        self.monitor_file = os.path.join(self.directory, "monitor.txt")
        with open(self.monitor_file, "wb") as monitor_out:
            self.monitor = subprocess.Popen(["redis-cli", "-p", str(self.redis_port), "MONITOR"], stdout=monitor_out)
        wait_until(lambda: os.path.getsize(self.monitor_file) > 0, 10, "MONITOR")
        config = {"listen": {"host": "127.0.0.1", "port": 0}, "storage": {"path": None}, "log": {"level": "error"},
                  "cluster": {"redis": f"redis://127.0.0.1:{self.redis_port}", "keyPrefix": "bench:",
                              "heartbeatSeconds": 0.2, "nodeTimeoutSeconds": 1},
                  "presence": {"maxInstantEvents": 100, "hysteresis": 10, "intervalSeconds": 1, "timeoutSeconds": 2,
                               "snapshotMaxMembers": 2000},
                  "limits": {"requestsPerSecond": 100000, "requestBurst": 100000, "maxChannelsPerSession": 256}}
        config_file = os.path.join(self.directory, "node.json")
        with open(config_file, "w") as out:
            json.dump(config, out)
        self.node = subprocess.Popen([self.binary, "--config", config_file, "--port", "0"], stdout=subprocess.PIPE, text=True)
        port = None
        while port is None:
            line = self.node.stdout.readline()
            if not line:
                raise RuntimeError("the node exited before listening")
            if line.startswith("listening on "):
                port = int(line.strip().split(":")[-1])
        self.url = f"ws://127.0.0.1:{port}/v1"
        self.loop = asyncio.new_event_loop()
        self.connections = self.loop.run_until_complete(fill(self.url, self.members))
        self.pipe = Pipe(self.redis_port)
        return self

    def captured(self):
        """Stops MONITOR; yields each command it saw from a client (not a script's own calls),
        as its arguments' bytes."""
        self.monitor.terminate()
        self.monitor.wait()
        with open(self.monitor_file, "rb") as lines:
            for line in lines:
                if b"[0 lua]" not in line:
                    yield [unescape(a) for a in MONITOR_ARGUMENT.findall(line)]

    def idle_rate(self):
        """Stops the node (SIGSTOP, so that only the replays run on Redis) and measures Redis'
        idle CPU rate over a second (CPU seconds per second)."""
        self.node.send_signal(signal.SIGSTOP)
        start_cpu, start = cpu_seconds(self.redis.pid), time.monotonic()
        time.sleep(1)
        return (cpu_seconds(self.redis.pid) - start_cpu) / (time.monotonic() - start)

    def replay(self, commands, rounds, idle):
        """`rounds` writes of `commands()` (a fresh batch each round), each waiting for its
        replies: Redis CPU µs per command, idle subtracted."""
        start_cpu, start = cpu_seconds(self.redis.pid), time.monotonic()
        count = 0
        for _ in range(rounds):
            batch = commands()
            count += len(batch)
            self.pipe.call(batch)
        elapsed = time.monotonic() - start
        return (cpu_seconds(self.redis.pid) - start_cpu - idle * elapsed) / count * 1e6

    def __exit__(self, *exc):
        if self.node and self.node.poll() is None:
            self.node.send_signal(signal.SIGCONT)
        if self.loop:
            async def close_all():
                await asyncio.gather(*(connection.close() for connection in self.connections), return_exceptions=True)
            self.loop.run_until_complete(close_all())
            self.loop.close()
        for process in (self.monitor, self.node, self.redis):
            if process and process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
                process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)
        return False
