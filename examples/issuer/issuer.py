#!/usr/bin/env python3
"""A Rollcall token issuer in the standard library (docs/authentication.md).

Mints HS256 tokens the broker accepts in auth.mode "jwt": claims sub, iat, exp and, when
given, channels, users and info (PROTOCOL §3). The secret comes from the environment variable
ROLLCALL_JWT_SECRET, the one the broker reads (auth.secretEnv).

  python3 issuer.py alice --ttl 600 --channels 'room:*' --users 'team:*' --info '{"name":"Alice"}'
  python3 issuer.py --serve 8001        # GET /token?user=alice -> {"token", "expiresAt"}

The server is a demo: it hands a token to anyone who asks. A real issuer sits behind the
application's own login and decides the claims from who the caller is (see `claims_for`).
"""
import argparse, base64, hashlib, hmac, json, os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(secret, user, ttl=3600, channels=None, users=None, info=None, now=None):
    """A compact HS256 JWS for `user`, valid for `ttl` seconds from `now`."""
    issued = int(now if now is not None else time.time())
    claims = {"sub": user, "iat": issued, "exp": issued + ttl}
    if channels is not None:
        claims["channels"] = channels
    if users is not None:
        claims["users"] = users
    if info is not None:
        claims["info"] = info
    compact = lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    signing_input = b64url(compact({"alg": "HS256", "typ": "JWT"})) + "." + b64url(compact(claims))
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def claims_for(user):
    """The claims a demo user gets: a display name, every channel, the status of everyone.
    Replace with the application's rules (roles, rooms the user may see, ...)."""
    return {"info": {"name": user.capitalize()}, "channels": None, "users": None}


def serve(secret, port, ttl):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            user = parse_qs(url.query).get("user", [""])[0]
            if url.path != "/token" or not user or len(user.encode()) > 128:
                return self.answer(400, {"error": "GET /token?user=<1-128 bytes>"})
            claims = claims_for(user)
            now = time.time()
            token = mint(secret, user, ttl, claims["channels"], claims["users"], claims["info"], now=now)
            expires = (int(now) + ttl) * 1000
            self.answer(200, {"token": token, "expiresAt": expires})

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", port), Handler)
    print(f"issuer listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description="Mint Rollcall login tokens (HS256).")
    parser.add_argument("user", nargs="?", help="the token's sub: the user id it logs in as")
    parser.add_argument("--ttl", type=int, default=3600, help="seconds the token stays valid")
    parser.add_argument("--channels", nargs="*", help="channel glob patterns (join/publish/setState and reads)")
    parser.add_argument("--users", nargs="*", help="user id glob patterns whose status may be read")
    parser.add_argument("--info", help="a JSON object shown with the user in presence listings")
    parser.add_argument("--serve", type=int, metavar="PORT", help="answer GET /token?user=… on PORT (0 picks one)")
    args = parser.parse_args()
    secret = os.environ.get("ROLLCALL_JWT_SECRET", "")
    if not secret:
        sys.exit("ROLLCALL_JWT_SECRET is not set or empty; it must hold the broker's HS256 secret")
    if not 1 <= args.ttl <= 31_536_000:
        sys.exit("--ttl must be from 1 to 31536000 seconds")
    if args.serve is not None:
        return serve(secret, args.serve, args.ttl)
    if not args.user:
        parser.error("a user id is required unless --serve is given")
    info = None
    if args.info is not None:
        info = json.loads(args.info)
        if not isinstance(info, dict):
            sys.exit("--info must be a JSON object")
    print(mint(secret, args.user, args.ttl, args.channels, args.users, info))


if __name__ == "__main__":
    main()
