#!/usr/bin/env python3
"""A Rollcall token issuer (docs/authentication.md).

Mints the tokens the broker accepts in auth.mode "jwt": claims sub, iat, exp and, when given,
channels, users and info (PROTOCOL §3).

- HS256 (the standard library only): the secret comes from the environment variable
  ROLLCALL_JWT_SECRET, the one the broker reads (auth.secretEnv).
- RS256, ES256 or EdDSA with --key: a PEM private key (RSA, EC P-256 or Ed25519, as --new-key
  writes it); the header's kid is the key's RFC 7638 thumbprint, and --jwks or the server's
  /.well-known/jwks.json publish the public half for the broker's auth.jwksFile or
  auth.jwksUrl. These need the `cryptography` package (pip install cryptography).

  python3 issuer.py alice --ttl 600 --channels 'room:*' --users 'team:*' --info '{"name":"Alice"}'
  python3 issuer.py --new-key EdDSA > 2026-02.pem
  python3 issuer.py alice --key 2026-02.pem
  python3 issuer.py --jwks --key 2026-02.pem --publish 2026-01.pem > jwks.json
  python3 issuer.py --serve 8001 [--key 2026-02.pem --publish 2026-01.pem]
      # GET /token?user=alice -> {"token", "expiresAt"}; GET /.well-known/jwks.json with --key

The server is a demo: it hands a token to anyone who asks. A real issuer sits behind the
application's own login and decides the claims from who the caller is (see `claims_for`).
"""
import argparse, base64, hashlib, hmac, json, os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

ALGORITHMS = ("RS256", "ES256", "EdDSA")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def compact(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def claims_of(user, ttl, channels, users, info, now):
    issued = int(now if now is not None else time.time())
    claims = {"sub": user, "iat": issued, "exp": issued + ttl}
    if channels is not None:
        claims["channels"] = channels
    if users is not None:
        claims["users"] = users
    if info is not None:
        claims["info"] = info
    return claims


def mint(secret, user, ttl=3600, channels=None, users=None, info=None, now=None):
    """A compact HS256 JWS for `user`, valid for `ttl` seconds from `now`."""
    claims = claims_of(user, ttl, channels, users, info, now)
    signing_input = b64url(compact({"alg": "HS256", "typ": "JWT"})) + "." + b64url(compact(claims))
    signature = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def crypto():
    """The `cryptography` package, needed for RS256, ES256 and EdDSA only."""
    try:
        import cryptography.hazmat.primitives.asymmetric  # noqa: F401
    except ImportError:
        sys.exit("RS256, ES256 and EdDSA need the cryptography package: pip install cryptography")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
    return hashes, serialization, ec, ed25519, padding, rsa, utils


class SigningKey:
    """A private key loaded from PEM, with its algorithm and public JWK (kid: its thumbprint)."""

    def __init__(self, pem: bytes):
        hashes, serialization, ec, ed25519, _, rsa, _ = crypto()
        self.key = serialization.load_pem_private_key(pem, password=None)
        public = self.key.public_key()
        if isinstance(self.key, rsa.RSAPrivateKey):
            numbers = public.public_numbers()
            if numbers.n.bit_length() < 2048:
                sys.exit("RS256 needs an RSA key of at least 2048 bits")
            big = lambda v: v.to_bytes((v.bit_length() + 7) // 8, "big")
            self.algorithm, members = "RS256", {"e": b64url(big(numbers.e)), "kty": "RSA", "n": b64url(big(numbers.n))}
        elif isinstance(self.key, ec.EllipticCurvePrivateKey) and isinstance(self.key.curve, ec.SECP256R1):
            numbers = public.public_numbers()
            self.algorithm, members = "ES256", {"crv": "P-256", "kty": "EC", "x": b64url(numbers.x.to_bytes(32, "big")),
                                                "y": b64url(numbers.y.to_bytes(32, "big"))}
        elif isinstance(self.key, ed25519.Ed25519PrivateKey):
            raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            self.algorithm, members = "EdDSA", {"crv": "Ed25519", "kty": "OKP", "x": b64url(raw)}
        else:
            sys.exit("the key must be RSA (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)")
        # RFC 7638: SHA-256 of the required members, in lexicographic order, without spaces.
        self.kid = b64url(hashlib.sha256(compact(members)).digest())
        self.jwk = {**members, "kid": self.kid, "alg": self.algorithm, "use": "sig"}

    def sign(self, data: bytes) -> bytes:
        hashes, _, ec, _, padding, _, utils = crypto()
        if self.algorithm == "RS256":
            return self.key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        if self.algorithm == "ES256":
            # JWS wants r || s (32 bytes each), not the DER the library returns (RFC 7518 §3.4).
            r, s = utils.decode_dss_signature(self.key.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return self.key.sign(data)

    def mint(self, user, ttl=3600, channels=None, users=None, info=None, now=None):
        """A compact JWS of this key's algorithm for `user`, with its kid in the header."""
        claims = claims_of(user, ttl, channels, users, info, now)
        header = {"alg": self.algorithm, "typ": "JWT", "kid": self.kid}
        signing_input = b64url(compact(header)) + "." + b64url(compact(claims))
        return signing_input + "." + b64url(self.sign(signing_input.encode()))


def load_key(path) -> SigningKey:
    with open(path, "rb") as file:
        return SigningKey(file.read())


def new_key(algorithm) -> str:
    """A new private key for `algorithm`, as unencrypted PKCS#8 PEM."""
    _, serialization, ec, ed25519, _, rsa, _ = crypto()
    key = {"RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
           "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
           "EdDSA": ed25519.Ed25519PrivateKey.generate}[algorithm]()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def key_set(keys) -> dict:
    """The JWK Set of `keys`' public halves (what auth.jwksFile holds and auth.jwksUrl serves)."""
    return {"keys": [key.jwk for key in keys]}


def claims_for(user):
    """The claims a demo user gets: a display name, every channel, the status of everyone.
    Replace with the application's rules (roles, rooms the user may see, ...)."""
    return {"info": {"name": user.capitalize()}, "channels": None, "users": None}


def serve(signer, published, port, ttl):
    """`signer` is a SigningKey or an HS256 secret; `published` the keys of the JWK Set."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            if url.path == "/.well-known/jwks.json" and published:
                return self.answer(200, key_set(published))
            user = parse_qs(url.query).get("user", [""])[0]
            if url.path != "/token" or not user or len(user.encode()) > 128:
                return self.answer(400, {"error": "GET /token?user=<1-128 bytes>"})
            claims = claims_for(user)
            now = time.time()
            if isinstance(signer, SigningKey):
                token = signer.mint(user, ttl, claims["channels"], claims["users"], claims["info"], now=now)
            else:
                token = mint(signer, user, ttl, claims["channels"], claims["users"], claims["info"], now=now)
            self.answer(200, {"token": token, "expiresAt": (int(now) + ttl) * 1000})

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
    parser = argparse.ArgumentParser(description="Mint Rollcall login tokens (HS256, or RS256/ES256/EdDSA with --key).")
    parser.add_argument("user", nargs="?", help="the token's sub: the user id it logs in as")
    parser.add_argument("--ttl", type=int, default=3600, help="seconds the token stays valid")
    parser.add_argument("--channels", nargs="*", help="channel glob patterns (join/publish/setState and reads)")
    parser.add_argument("--users", nargs="*", help="user id glob patterns whose status may be read")
    parser.add_argument("--info", help="a JSON object shown with the user in presence listings")
    parser.add_argument("--key", metavar="PEM", help="sign with this private key (RS256, ES256 or EdDSA) instead of HS256")
    parser.add_argument("--publish", metavar="PEM", action="append", default=[],
                        help="another key whose public half the JWK Set lists (rotation); repeatable")
    parser.add_argument("--jwks", action="store_true", help="print the JWK Set of --key and --publish, and exit")
    parser.add_argument("--new-key", choices=ALGORITHMS, help="print a new private key (PEM) for that algorithm, and exit")
    parser.add_argument("--serve", type=int, metavar="PORT", help="answer GET /token?user=… on PORT (0 picks one)")
    args = parser.parse_args()
    if args.new_key:
        return print(new_key(args.new_key), end="")
    if not 1 <= args.ttl <= 31_536_000:
        sys.exit("--ttl must be from 1 to 31536000 seconds")
    if args.publish and not args.key:
        sys.exit("--publish needs --key (the key that signs)")
    signer = load_key(args.key) if args.key else None
    published = [signer] + [load_key(path) for path in args.publish] if signer else []
    if args.jwks:
        if not published:
            sys.exit("--jwks needs --key")
        return print(json.dumps(key_set(published), indent=2))
    if signer is None:
        signer = os.environ.get("ROLLCALL_JWT_SECRET", "")
        if not signer:
            sys.exit("ROLLCALL_JWT_SECRET is not set or empty; it must hold the broker's HS256 secret (or give --key)")
    if args.serve is not None:
        return serve(signer, published, args.serve, args.ttl)
    if not args.user:
        parser.error("a user id is required unless --serve, --jwks or --new-key is given")
    info = None
    if args.info is not None:
        info = json.loads(args.info)
        if not isinstance(info, dict):
            sys.exit("--info must be a JSON object")
    if isinstance(signer, SigningKey):
        print(signer.mint(args.user, args.ttl, args.channels, args.users, info))
    else:
        print(mint(signer, args.user, args.ttl, args.channels, args.users, info))


if __name__ == "__main__":
    main()
