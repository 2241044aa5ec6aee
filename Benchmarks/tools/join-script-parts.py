#!/usr/bin/env python3
"""Where a cluster join's Redis time goes (BENCHMARKS.md, "Issue 30 item 4").

Starts its own redis-server (script_replay.Bed) (a free loopback port, no persistence) and one `rollcall` node in
cluster mode, fills one channel with MEMBERS members (presence on), and captures with MONITOR
the join script as the node loads it (SCRIPT LOAD) and the arguments of the last member's join.
Then, with the node stopped (SIGSTOP, so that only this runs on Redis), replays 6000 EVALSHA
calls (20 writes of 300) of each variant against the same data and prints Redis' CPU per call
(schedstat of every redis-server thread, idle rate subtracted):

  - `return 1` with the join's arguments (the cost of passing them);
  - the join script cut right after the presence library's prologue;
  - the prologue plus `rosterAtLastEvent` (the snapshot a joiner gets).

Usage: join-script-parts.py <release rollcall binary> <members>    (needs redis-server,
redis-cli and Python's `websockets`). Every process it starts is stopped by its own handle.
"""
import sys

from script_replay import Bed, wait_until

ROUNDS, BATCH = 20, 300
JOIN_BODY_MARKER = b"-- Fencing: only the node that owns the session joins"


def main():
    binary, members = sys.argv[1], int(sys.argv[2])
    with Bed(binary, members, "join-parts") as bed:
        # Past the interval flush of the last joins (intervalSeconds 1): nothing pending.
        wait_until(lambda: bed.pipe.call([[b"HLEN", Bed.CHANNEL + b":pend"]])[0] == b":0\r\n", 10, "the interval flush")
        join_text = join_arguments = None
        for arguments in bed.captured():
            if len(arguments) > 2 and arguments[:2] == [b"SCRIPT", b"LOAD"] and JOIN_BODY_MARKER in arguments[2]:
                join_text = arguments[2]
            if arguments and arguments[0] == b"EVALSHA" and any(b'"type":"join"' in a for a in arguments):
                join_arguments = arguments[2:]
        if join_text is None or join_arguments is None:
            raise RuntimeError("no join script or join call in MONITOR's output")
        variants = [
            ("EVALSHA `return 1` with the join's arguments", b"return 1"),
            ("the join script cut after the library's prologue",
             join_text.replace(JOIN_BODY_MARKER, b"do return 1 end\n" + JOIN_BODY_MARKER)),
            ("the prologue + rosterAtLastEvent (the snapshot)",
             join_text.replace(JOIN_BODY_MARKER, b"do return rosterAtLastEvent(limit, user) end\n" + JOIN_BODY_MARKER)),
        ]
        idle = bed.idle_rate()
        print(f"members {members}; join script {len(join_text)} bytes, {len(join_arguments) - 1} arguments "
              f"({sum(map(len, join_arguments))} bytes); redis idle {idle * 1e3:.2f} ms/s")
        for name, text in variants:
            loaded = bed.pipe.call([[b"SCRIPT", b"LOAD", text]])[0]
            command = [b"EVALSHA", loaded.split(b"\r\n")[1]] + join_arguments
            first = bed.pipe.call([command])[0]
            if first.startswith(b"-"):
                raise RuntimeError(f"{name}: {first!r}")
            micros = bed.replay(lambda: [command] * BATCH, ROUNDS, idle)
            print(f"{name}: {micros:.1f} µs per call (Redis CPU)")


if __name__ == "__main__":
    main()
