#!/usr/bin/env python3
"""A Rollcall backend in the standard library: receives webhooks (PROTOCOL §11), checks their
signature, keeps each channel's roster from presence events by seq, and kicks users whose
custom status contains a banned word through the server API (POST /api/v1/disconnectUser).

Environment: ROLLCALL_WEBHOOK_SECRET (required), ROLLCALL_WEBHOOK_SECRETS (more secrets accepted
during a rotation, comma-separated), ROLLCALL_API_KEY, ROLLCALL_URL (default
http://127.0.0.1:8080), BACKEND_PORT (default 8000; 0 picks one), BANNED_WORDS (comma list),
MAX_SKEW_SECONDS (default 300). GET /rosters shows what it holds."""
import hashlib, hmac, json, os, sys, time, urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

SECRETS = [os.environ["ROLLCALL_WEBHOOK_SECRET"].encode()] + [
    s.strip().encode() for s in os.environ.get("ROLLCALL_WEBHOOK_SECRETS", "").split(",") if s.strip()]
API_KEY = os.environ.get("ROLLCALL_API_KEY", "")
BROKER = os.environ.get("ROLLCALL_URL", "http://127.0.0.1:8080").rstrip("/")
BANNED = [w.strip().lower() for w in os.environ.get("BANNED_WORDS", "").split(",") if w.strip()]
MAX_SKEW_MS = float(os.environ.get("MAX_SKEW_SECONDS", "300")) * 1000

rosters = {}       # (channelType, channel) -> {"seq": int, "members": {userId: state}}
seen_ids = {}      # event id -> None, the most recent ones (delivery is at least once)


def verify(header, body):
    """True when t is recent and one `v1` of `t=<ms>,v1=<hex>[,v1=<hex>…]` signs body with one of
    SECRETS. The broker signs with each of its secrets (webhooks.secret and webhooks.secrets),
    so either side can rotate its secret without a batch being refused (docs/webhooks.md)."""
    pairs = [p.split("=", 1) for p in header.split(",") if "=" in p]
    times = [value for key, value in pairs if key == "t"]
    signatures = [value for key, value in pairs if key == "v1"]
    try:
        sent_at = int(times[0])
    except (IndexError, ValueError):
        return False
    if abs(time.time() * 1000 - sent_at) > MAX_SKEW_MS:
        return False
    signed = f"{sent_at}.".encode() + body
    expected = [hmac.new(secret, signed, hashlib.sha256).hexdigest() for secret in SECRETS]
    return any(hmac.compare_digest(e, s) for e in expected for s in signatures)


def call_api(op, args):
    """POST /api/v1/<op> (PROTOCOL §10); returns the result or raises."""
    request = urllib.request.Request(f"{BROKER}/api/v1/{op}", data=json.dumps(args).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)["result"]


def reread(key):
    """A gap in seq: read the roster again (getOnlineUsers; its seq says where it stands)."""
    members, page, seq = {}, None, 0
    try:
        while True:
            args = {"channel": key[1], "channelType": key[0], "includeState": True, "pageSize": 1000}
            if page: args["page"] = page
            result = call_api("getOnlineUsers", args)
            members.update({u["userId"]: u.get("state", {}) for u in result["users"]})
            seq, page = result.get("seq", 0), result.get("nextPage")
            if not page: break
        rosters[key] = {"seq": seq, "members": members}
    except Exception as error:  # the API is down or off: start empty, the next gap retries
        print(f"backend: cannot re-read {key}: {error}", file=sys.stderr)
        rosters.pop(key, None)


def apply_presence(event):
    key = (event["channelType"], event["channel"])
    roster = rosters.setdefault(key, {"seq": 0, "members": {}})
    if event["seq"] <= roster["seq"]:
        return                                   # already applied (a retried batch)
    if event["seq"] != roster["seq"] + 1:
        reread(key)                              # missed something
        return
    roster["seq"] = event["seq"]
    members, kind = roster["members"], event["type"]
    if kind in ("join", "stateChanged"):
        members[event["publisher"]] = event.get("state", {})
    elif kind in ("leave", "timeout"):
        members.pop(event["publisher"], None)
    elif kind == "interval":
        change = event["interval"]
        for user in change["join"]: members[user] = {}
        for user in change["leave"] + change["timeout"]: members.pop(user, None)
        for entry in change["stateChanged"]: members[entry["userId"]] = entry["state"]


def apply_status(record):
    text = (record.get("customStatus") or "").lower()
    if record["status"] == "online" and any(word in text for word in BANNED):
        try:
            result = call_api("disconnectUser", {"userId": record["userId"], "reason": "banned word in status"})
            print(f"backend: kicked {record['userId']} ({result.get('sessions')} sessions)", flush=True)
        except Exception as error:
            print(f"backend: cannot kick {record['userId']}: {error}", file=sys.stderr, flush=True)


def handle(batch):
    for event in batch["events"]:
        if event["id"] in seen_ids:
            continue
        seen_ids[event["id"]] = None
        if len(seen_ids) > 100_000:
            seen_ids.pop(next(iter(seen_ids)))
        if event["event"] == "presence":
            apply_presence(event)
        elif event["event"] == "channel" and event["type"] == "vacated":
            rosters.pop((event["channelType"], event["channel"]), None)   # seq restarts with the next member
        elif event["event"] == "userStatus":
            apply_status(event["status"])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if not verify(self.headers.get("Rollcall-Signature", ""), body):
            return self.reply(401, b'{"error":"bad signature"}')
        handle(json.loads(body))
        self.reply(204)

    def do_GET(self):
        if self.path != "/rosters":
            return self.reply(404)
        listing = [{"channelType": k[0], "channel": k[1], "seq": r["seq"], "members": r["members"]}
                   for k, r in sorted(rosters.items())]
        self.reply(200, json.dumps(listing).encode())

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", int(os.environ.get("BACKEND_PORT", "8000"))), Handler)
    print(f"backend listening on 127.0.0.1:{server.server_port}", flush=True)
    server.serve_forever()
