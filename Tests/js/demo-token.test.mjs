// The demo page's getToken (examples/web/token.js): it hands back the token in force while
// that one is good, and asks the user (one shared question) once it nears its exp or the
// broker said refreshRequired for it. No broker needed: the page's side of the browser test.

import assert from "node:assert/strict";
import { test } from "node:test";

import { tokenAsker, tokenExpiry } from "../../examples/web/token.js";
import { tokenFor } from "./support/jwt.mjs";

test("tokenExpiry reads exp (ms) from a JWT, null from anything else", () => {
  const { token, expiresAt } = tokenFor("amy", 600, { info: { name: "Amy ü" } });
  assert.equal(tokenExpiry(token), expiresAt);
  assert.equal(tokenExpiry("not-a-jwt"), null);
  assert.equal(tokenExpiry("a.e30.b"), null, "no exp claim");
});

test("tokenAsker: the token in force while good; a question when it nears exp or after refreshRequired", async () => {
  let inForce = tokenFor("amy", 600);
  const questions = [];
  const asker = tokenAsker(() => inForce.token, (reason) => new Promise((resolve) => questions.push({ reason, resolve })));

  assert.equal(await asker.getToken(), inForce.token, "10 minutes left: no question");
  assert.equal(questions.length, 0);

  asker.noticeFor(inForce.expiresAt);
  const first = asker.getToken();
  const second = asker.getToken();
  assert.equal(questions.length, 1, "calls while asking share one question");
  assert.match(questions[0].reason, /about to expire/);
  const fresh = tokenFor("amy", 1200);
  questions[0].resolve(fresh.token);
  assert.equal(await first, fresh.token);
  assert.equal(await second, fresh.token);

  inForce = fresh; // the broker accepted it (rollcall.js keeps it in options.token)
  assert.equal(await asker.getToken(), fresh.token, "a token newer than the notice is good");

  inForce = tokenFor("amy", 5); // within 10 s of its exp
  const near = asker.getToken();
  assert.equal(questions.length, 2);
  questions[1].resolve("next");
  assert.equal(await near, "next");

  inForce = tokenFor("amy", -5);
  const expired = asker.getToken();
  assert.match(questions[2].reason, /has expired/);
  questions[2].resolve("again");
  assert.equal(await expired, "again");
});
