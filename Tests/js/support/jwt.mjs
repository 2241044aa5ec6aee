// HS256 tokens for the jwt-mode tests (docs/authentication.md): `mint(claims)` signs with the
// tests' shared secret; `tokenFor` fills in `sub` and an `exp` some seconds from now.

import { createHmac } from "node:crypto";

/** The secret the jwt-mode test brokers are started with (`auth.secret`). */
export const SECRET = "js-test-secret-0123456789abcdef0123";

/** Seconds since the epoch, as `exp` counts them. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * An HS256 JWT over `claims`, signed with `secret`.
 * @param {object} claims
 * @param {string} [secret]
 * @returns {string}
 */
export function mint(claims, secret = SECRET) {
  const b64 = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
  const head = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(claims)}`;
  return `${head}.${createHmac("sha256", secret).update(head).digest("base64url")}`;
}

/**
 * A token for `userId` that expires `ttlSeconds` from now, with more claims (`channels`,
 * `users`, `info`). Returns the token and its `exp` in milliseconds (what `expiresAt` reports).
 * @param {string} userId
 * @param {number} ttlSeconds
 * @param {object} [claims]
 * @returns {{token: string, expiresAt: number}}
 */
export function tokenFor(userId, ttlSeconds, claims = {}) {
  const exp = nowSeconds() + ttlSeconds;
  return { token: mint({ sub: userId, exp, ...claims }), expiresAt: exp * 1000 };
}
