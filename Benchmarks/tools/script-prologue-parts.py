#!/usr/bin/env python3
"""Where the Redis time of a cluster op's script goes before its body (BENCHMARKS.md, "Issue 30
item 4", "Session 49").

Starts its own redis-server and one `rollcall` node in cluster mode (script_replay.Bed), fills
one channel with MEMBERS members (presence on), then one more session joins
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
import re
import sys

import websockets

from script_replay import Bed, wait_until

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
    with Bed(binary, members, "script-parts") as bed:
        bed.connections.append(bed.loop.run_until_complete(last_member_ops(bed.url)))
        # MONITOR has printed the publish once the message counter moved.
        wait_until(lambda: bed.pipe.call([[b"HGET", Bed.CHANNEL, b"mq"]])[0] != b"$-1\r\n", 10, "the publish")
        texts, calls = {}, {}
        for arguments in bed.captured():
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
        idle = bed.idle_rate()
        print(f"members {members}; redis idle {idle * 1e3:.2f} ms/s")
        for op in BODY_MARKERS:
            text, arguments = texts[op], calls[op]
            print(f"{op}: script {len(text)} bytes, {len(arguments)} arguments after the SHA-1 "
                  f"({sum(map(len, arguments))} bytes)")
            for name, variant in variants(op, text):
                loaded = bed.pipe.call([[b"SCRIPT", b"LOAD", variant]])[0]
                command = [b"EVALSHA", loaded.split(b"\r\n")[1]] + arguments
                first = bed.pipe.call([command])[0]
                if first.startswith(b"-"):
                    raise RuntimeError(f"{op}, {name}: {first!r}")
                figures = [bed.replay(lambda: [command] * BATCH, ROUNDS, idle) for _ in range(REPEATS)]
                print(f"  {name}: " + ", ".join(f"{figure:.1f}" for figure in figures) + " µs per call (Redis CPU)")


if __name__ == "__main__":
    main()
