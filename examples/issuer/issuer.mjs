#!/usr/bin/env node
// A Rollcall token issuer with Node's standard library only (docs/authentication.md).
//
// Mints the tokens the broker accepts in auth.mode "jwt": claims sub, iat, exp and, when
// given, channels, users and info (PROTOCOL §3).
// - HS256: the secret comes from the environment variable ROLLCALL_JWT_SECRET, the one the
//   broker reads (auth.secretEnv).
// - RS256, ES256 or EdDSA with --key: a PEM private key (RSA, EC P-256 or Ed25519, as
//   --new-key writes it); the header's kid is the key's RFC 7638 thumbprint, and --jwks or the
//   server's /.well-known/jwks.json publish the public half for the broker's auth.jwksFile or
//   auth.jwksUrl.
//
//   node issuer.mjs alice --ttl 600 --channels 'room:*' --users 'team:*' --info '{"name":"Alice"}'
//   node issuer.mjs --new-key EdDSA > 2026-02.pem
//   node issuer.mjs alice --key 2026-02.pem
//   node issuer.mjs --jwks --key 2026-02.pem --publish 2026-01.pem > jwks.json
//   node issuer.mjs --serve 8001 [--key 2026-02.pem --publish 2026-01.pem]
//       # GET /token?user=alice -> {"token", "expiresAt"}; GET /.well-known/jwks.json with --key
//
// The server is a demo: it hands a token to anyone who asks. A real issuer sits behind the
// application's own login and decides the claims from who the caller is (see claimsFor).
import { createHash, createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const b64url = (data) => Buffer.from(data).toString("base64url");
const ALGORITHMS = ["RS256", "ES256", "EdDSA"];

function claimsOf(user, { ttl = 3600, channels, users, info, now = Date.now() } = {}) {
  const issued = Math.floor(now / 1000);
  const claims = { sub: user, iat: issued, exp: issued + ttl };
  if (channels !== undefined) claims.channels = channels;
  if (users !== undefined) claims.users = users;
  if (info !== undefined) claims.info = info;
  return claims;
}

/** A compact HS256 JWS for `user`, valid for `ttl` seconds from `now` (ms). */
export function mint(secret, user, options = {}) {
  const signingInput = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" })) + "." + b64url(JSON.stringify(claimsOf(user, options)));
  const signature = createHmac("sha256", secret).update(signingInput).digest();
  return signingInput + "." + b64url(signature);
}

/** A private key from PEM, with its algorithm and public JWK (kid: its RFC 7638 thumbprint). */
export class SigningKey {
  constructor(pem) {
    this.key = createPrivateKey(pem);
    const jwk = createPublicKey(this.key).export({ format: "jwk" });
    let members;
    if (jwk.kty === "RSA") {
      if (Buffer.from(jwk.n, "base64url").length < 256) fail("RS256 needs an RSA key of at least 2048 bits");
      [this.algorithm, members] = ["RS256", { e: jwk.e, kty: "RSA", n: jwk.n }];
    } else if (jwk.kty === "EC" && jwk.crv === "P-256") {
      [this.algorithm, members] = ["ES256", { crv: "P-256", kty: "EC", x: jwk.x, y: jwk.y }];
    } else if (jwk.kty === "OKP" && jwk.crv === "Ed25519") {
      [this.algorithm, members] = ["EdDSA", { crv: "Ed25519", kty: "OKP", x: jwk.x }];
    } else {
      fail("the key must be RSA (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)");
    }
    // RFC 7638: SHA-256 of the required members, in lexicographic order, without spaces.
    this.kid = b64url(createHash("sha256").update(JSON.stringify(members)).digest());
    this.jwk = { ...members, kid: this.kid, alg: this.algorithm, use: "sig" };
  }

  sign(data) {
    if (this.algorithm === "RS256") return sign("sha256", data, this.key);
    // JWS wants r || s (32 bytes each), not DER (RFC 7518 §3.4).
    if (this.algorithm === "ES256") return sign("sha256", data, { key: this.key, dsaEncoding: "ieee-p1363" });
    return sign(null, data, this.key);
  }

  /** A compact JWS of this key's algorithm for `user`, with its kid in the header. */
  mint(user, options = {}) {
    const header = { alg: this.algorithm, typ: "JWT", kid: this.kid };
    const signingInput = b64url(JSON.stringify(header)) + "." + b64url(JSON.stringify(claimsOf(user, options)));
    return signingInput + "." + b64url(this.sign(Buffer.from(signingInput)));
  }
}

/** A new private key for `algorithm`, as unencrypted PKCS#8 PEM. */
export function newKey(algorithm) {
  const pair = algorithm === "RS256" ? generateKeyPairSync("rsa", { modulusLength: 2048 })
    : algorithm === "ES256" ? generateKeyPairSync("ec", { namedCurve: "P-256" })
    : generateKeyPairSync("ed25519");
  return pair.privateKey.export({ type: "pkcs8", format: "pem" });
}

/** The JWK Set of `keys`' public halves (what auth.jwksFile holds and auth.jwksUrl serves). */
export const keySet = (keys) => ({ keys: keys.map((key) => key.jwk) });

/** The claims a demo user gets: a display name, every channel, everyone's status. Replace
 *  with the application's rules (roles, rooms the user may see, ...). */
export function claimsFor(user) {
  return { info: { name: user.charAt(0).toUpperCase() + user.slice(1) } };
}

/** `signer` is a SigningKey or an HS256 secret; `published` the keys of the JWK Set. */
function serve(signer, published, port, ttl) {
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://localhost");
    const answer = (status, body) => {
      const data = JSON.stringify(body);
      response.writeHead(status, {
        "Content-Type": "application/json",
        "Content-Length": Buffer.byteLength(data),
        "Access-Control-Allow-Origin": "*",
        "Cache-Control": "no-store",
      });
      response.end(data);
    };
    if (request.method === "GET" && url.pathname === "/.well-known/jwks.json" && published.length > 0) {
      return answer(200, keySet(published));
    }
    const user = url.searchParams.get("user") ?? "";
    if (request.method !== "GET" || url.pathname !== "/token" || !user || Buffer.byteLength(user) > 128) {
      return answer(400, { error: "GET /token?user=<1-128 bytes>" });
    }
    const now = Date.now();
    const options = { ttl, now, ...claimsFor(user) };
    const token = signer instanceof SigningKey ? signer.mint(user, options) : mint(signer, user, options);
    answer(200, { token, expiresAt: (Math.floor(now / 1000) + ttl) * 1000 });
  });
  server.listen(port, "127.0.0.1", () => console.log(`issuer listening on 127.0.0.1:${server.address().port}`));
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

function main(argv) {
  const options = { ttl: 3600, publish: [] };
  let user;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const list = () => {
      const values = [];
      while (i + 1 < argv.length && !argv[i + 1].startsWith("--")) values.push(argv[++i]);
      return values;
    };
    if (arg === "--ttl") options.ttl = Number(argv[++i]);
    else if (arg === "--channels") options.channels = list();
    else if (arg === "--users") options.users = list();
    else if (arg === "--info") options.info = argv[++i];
    else if (arg === "--serve") options.serve = Number(argv[++i]);
    else if (arg === "--key") options.key = argv[++i];
    else if (arg === "--publish") options.publish.push(argv[++i]);
    else if (arg === "--jwks") options.jwks = true;
    else if (arg === "--new-key") options.newKey = argv[++i];
    else if (!arg.startsWith("--") && user === undefined) user = arg;
    else fail(`unknown argument ${arg}`);
  }
  if (options.newKey !== undefined) {
    if (!ALGORITHMS.includes(options.newKey)) fail(`--new-key must be one of ${ALGORITHMS.join(", ")}`);
    return process.stdout.write(newKey(options.newKey));
  }
  if (!Number.isInteger(options.ttl) || options.ttl < 1 || options.ttl > 31536000) fail("--ttl must be from 1 to 31536000 seconds");
  if (options.publish.length > 0 && options.key === undefined) fail("--publish needs --key (the key that signs)");
  let signer = options.key === undefined ? undefined : new SigningKey(readFileSync(options.key));
  const published = signer ? [signer, ...options.publish.map((path) => new SigningKey(readFileSync(path)))] : [];
  if (options.jwks) {
    if (published.length === 0) fail("--jwks needs --key");
    return console.log(JSON.stringify(keySet(published), null, 2));
  }
  if (signer === undefined) {
    signer = process.env.ROLLCALL_JWT_SECRET ?? "";
    if (!signer) fail("ROLLCALL_JWT_SECRET is not set or empty; it must hold the broker's HS256 secret (or give --key)");
  }
  if (options.serve !== undefined) return serve(signer, published, options.serve, options.ttl);
  if (!user) fail("a user id is required unless --serve, --jwks or --new-key is given");
  if (options.info !== undefined) {
    let info;
    try { info = JSON.parse(options.info); } catch { info = null; }
    if (info === null || typeof info !== "object" || Array.isArray(info)) fail("--info must be a JSON object");
    options.info = info;
  }
  console.log(signer instanceof SigningKey ? signer.mint(user, options) : mint(signer, user, options));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv.slice(2));
