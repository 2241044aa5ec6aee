#!/usr/bin/env python3
"""Minimal Rollcall client: log in, join a channel, keep its roster, print changes.

    pip install websockets
    python3 examples/python/presence.py alice room:lobby [ws://127.0.0.1:8080/v1]
"""
import asyncio, itertools, json, sys

import websockets


async def main(user, channel, url="ws://127.0.0.1:8080/v1"):
    ids = itertools.count(1)
    roster = {}  # userId -> state, kept from the snapshot and every presence event after it
    async with websockets.connect(url, subprotocols=["rollcall.v1"]) as ws:
        await ws.send(json.dumps({"id": next(ids), "op": "login", "userId": user, "platform": "linux"}))
        await ws.send(json.dumps({"id": next(ids), "op": "join", "channel": channel, "state": {"via": "python"}}))
        async for frame in ws:
            for line in frame.split("\n"):  # the broker may batch several objects per frame
                if not line:
                    continue
                obj = json.loads(line)
                if "id" in obj and not obj["ok"]:
                    sys.exit(f"error: {obj['error']['code']}: {obj['error']['message']}")
                if obj.get("event") == "message":
                    print(f"{obj['publisher']}: {json.dumps(obj['message'])}", flush=True)
                if obj.get("event") != "presence":
                    continue
                kind, who = obj["type"], obj.get("publisher")
                if kind == "snapshot":
                    roster = {m["userId"]: m["state"] for m in obj["snapshot"]}
                elif kind in ("join", "stateChanged"):
                    roster[who] = obj["state"]
                elif kind in ("leave", "timeout"):
                    roster.pop(who, None)
                elif kind == "interval":  # joins, then leaves/timeouts, then states
                    lists = obj["interval"]
                    roster.update({u: {} for u in lists["join"]})
                    for u in lists["leave"] + lists["timeout"]:
                        roster.pop(u, None)
                    roster.update({s["userId"]: s["state"] for s in lists["stateChanged"]})
                print(f"[{obj['mode']}] {kind} {who or ''} -> {len(roster)} online: "
                      + ", ".join(f"{u}{s or ''}" for u, s in sorted(roster.items())), flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    try:
        asyncio.run(main(*sys.argv[1:4]))
    except KeyboardInterrupt:
        pass  # closing the socket sends a close frame: the others see a clean leave
