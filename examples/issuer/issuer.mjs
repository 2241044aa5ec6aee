#!/usr/bin/env node
// A Rollcall token issuer with Node's standard library only (docs/authentication.md).
//
// Mints HS256 tokens the broker accepts in auth.mode "jwt": claims sub, iat, exp and, when
// given, channels, users and info (PROTOCOL §3). The secret comes from the environment
// variable ROLLCALL_JWT_SECRET, the one the broker reads (auth.secretEnv).
//
//   node issuer.mjs alice --ttl 600 --channels 'room:*' --users 'team:*' --info '{"name":"Alice"}'
//   node issuer.mjs --serve 8001        # GET /token?user=alice -> {"token", "expiresAt"}
//
// The server is a demo: it hands a token to anyone who asks. A real issuer sits behind the
// application's own login and decides the claims from who the caller is (see claimsFor).
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const b64url = (data) => Buffer.from(data).toString("base64url");

/** A compact HS256 JWS for `user`, valid for `ttl` seconds from `now` (ms). */
export function mint(secret, user, { ttl = 3600, channels, users, info, now = Date.now() } = {}) {
  const issued = Math.floor(now / 1000);
  const claims = { sub: user, iat: issued, exp: issued + ttl };
  if (channels !== undefined) claims.channels = channels;
  if (users !== undefined) claims.users = users;
  if (info !== undefined) claims.info = info;
  const signingInput = b64url(JSON.stringify({ alg: "HS256", typ: "JWT" })) + "." + b64url(JSON.stringify(claims));
  const signature = createHmac("sha256", secret).update(signingInput).digest();
  return signingInput + "." + b64url(signature);
}

/** The claims a demo user gets: a display name, every channel, everyone's status. Replace
 *  with the application's rules (roles, rooms the user may see, ...). */
export function claimsFor(user) {
  return { info: { name: user.charAt(0).toUpperCase() + user.slice(1) } };
}

function serve(secret, port, ttl) {
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://localhost");
    const user = url.searchParams.get("user") ?? "";
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
    if (request.method !== "GET" || url.pathname !== "/token" || !user || Buffer.byteLength(user) > 128) {
      return answer(400, { error: "GET /token?user=<1-128 bytes>" });
    }
    const now = Date.now();
    const token = mint(secret, user, { ttl, now, ...claimsFor(user) });
    answer(200, { token, expiresAt: (Math.floor(now / 1000) + ttl) * 1000 });
  });
  server.listen(port, "127.0.0.1", () => console.log(`issuer listening on 127.0.0.1:${server.address().port}`));
}

function fail(message) {
  console.error(message);
  process.exit(1);
}

function main(argv) {
  const options = { ttl: 3600 };
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
    else if (!arg.startsWith("--") && user === undefined) user = arg;
    else fail(`unknown argument ${arg}`);
  }
  const secret = process.env.ROLLCALL_JWT_SECRET ?? "";
  if (!secret) fail("ROLLCALL_JWT_SECRET is not set or empty; it must hold the broker's HS256 secret");
  if (!Number.isInteger(options.ttl) || options.ttl < 1 || options.ttl > 31536000) fail("--ttl must be from 1 to 31536000 seconds");
  if (options.serve !== undefined) return serve(secret, options.serve, options.ttl);
  if (!user) fail("a user id is required unless --serve is given");
  if (options.info !== undefined) {
    let info;
    try { info = JSON.parse(options.info); } catch { info = null; }
    if (info === null || typeof info !== "object" || Array.isArray(info)) fail("--info must be a JSON object");
    options.info = info;
  }
  console.log(mint(secret, user, options));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv.slice(2));
