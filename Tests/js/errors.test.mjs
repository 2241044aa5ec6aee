// Error replies surface as typed `RollcallError`s: the protocol's code (PROTOCOL §7) in
// `code`, `retryAfterMs` for rate limits, the reply's error object in `details`. Also the
// jwt mode: a refused login, a forbidden channel, read permissions, `refreshRequired` and `refresh`.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { ERROR_CODES, RollcallClient, RollcallError } from "./support/rollcall.mjs";
import { Broker } from "./support/broker.mjs";
import { ClientPool } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";
import { SECRET, mint, nowSeconds as now } from "./support/jwt.mjs";

/** Asserts that `promise` rejects with a RollcallError of `code`; returns the error. */
async function rejectsWith(promise, code) {
  let caught;
  await assert.rejects(promise, (error) => {
    caught = error;
    return true;
  });
  assert.ok(caught instanceof RollcallError, `expected a RollcallError, got ${caught}`);
  assert.equal(caught.name, "RollcallError");
  assert.equal(caught.code, code, caught.message);
  assert.ok(ERROR_CODES.includes(caught.code));
  assert.equal(caught.details.code ?? "DISCONNECTED", code);
  return caught;
}

describe("error codes", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  let client;

  before(async () => {
    broker = await Broker.start({
      state: { maxKeys: 2, maxKeyBytes: 8, maxValueBytes: 8, maxTotalBytes: 20, maxPendingChannels: 1 },
      limits: { maxMessageBytes: 64, maxChannelsPerSession: 2 },
    });
    client = await pool.open(broker.url, "err");
  });
  after(async () => {
    pool.closeAll();
    await broker.dispose();
  });

  test("request shapes: UNKNOWN_OP, INVALID_REQUEST, INVALID_ARGUMENT, ALREADY_LOGGED_IN", async () => {
    await rejectsWith(client.request("frobnicate"), "UNKNOWN_OP");
    await rejectsWith(client.request("join", {}), "INVALID_REQUEST");
    await rejectsWith(client.setState("room:e", { n: 1 }), "INVALID_REQUEST");
    await rejectsWith(client.join("room:e", { channelType: "bogus" }), "INVALID_ARGUMENT");
    await rejectsWith(client.getOnlineUsers("room:e", { includeUserId: false, includeState: true }), "INVALID_ARGUMENT");
    await rejectsWith(client.request("login", { userId: "again" }), "ALREADY_LOGGED_IN");
    assert.equal(client.rosters.size, 0, "a failed join leaves no roster behind");
  });

  test("presence: NOT_IN_CHANNEL, USER_NOT_PRESENT, state limits, TOO_MANY_PENDING_STATES, TOO_MANY_CHANNELS", async () => {
    await rejectsWith(client.leave("room:never"), "NOT_IN_CHANNEL");
    await rejectsWith(client.publish("stream:x", "hi", "stream"), "NOT_IN_CHANNEL");
    await rejectsWith(client.getState("room:e", "nobody"), "USER_NOT_PRESENT");
    await client.join("room:e");
    await rejectsWith(client.setState("room:e", { a: "1", b: "2", c: "3" }), "TOO_MANY_KEYS");
    await rejectsWith(client.setState("room:e", { "key-too-long": "1" }), "KEY_TOO_LONG");
    await rejectsWith(client.setState("room:e", { a: "value-too-long" }), "VALUE_TOO_LONG");
    await rejectsWith(client.setState("room:e", { abcdefgh: "12345678", ijklmnop: "12345678" }), "STATE_TOO_LARGE");
    await rejectsWith(client.publish("room:e", "x".repeat(100)), "MESSAGE_TOO_LARGE");
    const pending = await client.setState("room:p1", { a: "1" });
    assert.equal(pending.pending, true);
    await rejectsWith(client.setState("room:p2", { a: "1" }), "TOO_MANY_PENDING_STATES");
    await client.join("room:e2");
    await rejectsWith(client.join("room:e3"), "TOO_MANY_CHANNELS");
  });

  test("user status: CUSTOM_STATUS_TOO_LONG, TOO_MANY_USERS, failed ids, RATE_LIMITED with retryAfterMs", async () => {
    await rejectsWith(client.setCustomStatus("x".repeat(65)), "CUSTOM_STATUS_TOO_LONG");
    await rejectsWith(client.getUserStatus(Array.from({ length: 501 }, (_, i) => `u${i}`)), "TOO_MANY_USERS");
    const { failed } = await client.subscribe(["", "err"]);
    assert.deepEqual(failed, [{ userId: "", code: "INVALID_ARGUMENT" }, { userId: "err", code: "CANNOT_SUBSCRIBE_SELF" }]);
    let limited;
    for (let i = 0; i < 5 && !limited; i++) {
      try {
        await client.setCustomStatus(`s${i}`);
      } catch (error) {
        limited = error;
      }
    }
    assert.ok(limited instanceof RollcallError);
    assert.equal(limited.code, "RATE_LIMITED");
    assert.equal(typeof limited.retryAfterMs, "number");
    assert.ok(limited.retryAfterMs > 0);
  });

  test("DISCONNECTED: requests after close reject locally", async () => {
    const gone = await pool.open(broker.url, "gone");
    gone.close();
    assert.equal(gone.state, "closed");
    await rejectsWith(gone.ping(), "DISCONNECTED");
  });
});

describe("jwt mode", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();

  before(async () => {
    broker = await Broker.start({ auth: { mode: "jwt", secret: SECRET } });
  });
  after(async () => {
    pool.closeAll();
    await broker.dispose();
  });

  test("a bad token: connect rejects with UNAUTHORIZED and the client ends closed (no retry)", async () => {
    const client = new RollcallClient(broker.url, { userId: "jan", token: mint({ sub: "someone-else", exp: now() + 600 }) });
    pool.clients.push(client);
    const closed = nextEvent(client, "connection", (c) => c.state === "closed");
    await rejectsWith(client.open(), "UNAUTHORIZED");
    await closed;
    assert.equal(client.state, "closed");
  });

  test("FORBIDDEN outside the token's channels", async () => {
    const client = await pool.open(broker.url, "kim", { token: mint({ sub: "kim", exp: now() + 600, channels: ["room:*"] }) });
    await client.join("room:ok");
    await rejectsWith(client.join("other:no"), "FORBIDDEN");
    await rejectsWith(client.publish("other:no", "hi"), "FORBIDDEN");
    assert.equal(client.state, "online");
  });

  test("read permissions (1.1): users globs fail ids with FORBIDDEN, channels globs refuse reads", async () => {
    const other = await pool.open(broker.url, "pat", { token: mint({ sub: "pat", exp: now() + 600 }) });
    await other.join("team:x");
    await other.join("room:open");
    const client = await pool.open(broker.url, "quin", {
      token: mint({ sub: "quin", exp: now() + 600, channels: ["room:*"], users: ["friend-*"] }),
    });
    const status = await client.getUserStatus(["quin", "friend-1", "pat"]);
    assert.deepEqual(status.statuses.map((r) => r.userId).sort(), ["friend-1", "quin"], "the own id is always allowed");
    assert.deepEqual(status.failed, [{ userId: "pat", code: "FORBIDDEN" }]);
    const subscribed = await client.subscribe(["friend-2", "pat"]);
    assert.deepEqual(subscribed.failed, [{ userId: "pat", code: "FORBIDDEN" }]);
    assert.deepEqual([...client.subscriptions], ["friend-2"], "a forbidden id is not recorded as followed");
    await rejectsWith(client.getUserChannels("pat"), "FORBIDDEN");
    await rejectsWith(client.getOnlineUsers("team:x"), "FORBIDDEN");
    await rejectsWith(client.getState("team:x", "pat"), "FORBIDDEN");
    const open = await client.getOnlineUsers("room:open");
    assert.deepEqual(open.users.map((u) => u.userId), ["pat"]);
    const own = await client.getUserChannels("quin");
    assert.deepEqual(own, { totalChannel: 0, channels: [] });
    assert.equal(client.state, "online");
  });

  test("refreshRequired, then refresh (PROTOCOL 1.1)", async () => {
    // exp in 30 s: less than auth.refreshNoticeSeconds (default 60) remains, so the notice comes at once.
    const client = new RollcallClient(broker.url, { userId: "lou", token: mint({ sub: "lou", exp: now() + 30, channels: ["room:*"] }) });
    pool.clients.push(client);
    const notices = record(client, "session");
    const login = await client.open();
    assert.equal(typeof login.expiresAt, "number");
    // The notice follows the login reply (a refresh sent before it would replace the token it is about).
    await eventually(() => notices.events.length > 0, { message: "refreshRequired" });
    assert.equal(notices.events[0].type, "refreshRequired");
    assert.equal(notices.events[0].expiresAt, login.expiresAt);
    await rejectsWith(client.join("other:no"), "FORBIDDEN");
    const fresh = mint({ sub: "lou", exp: now() + 1200, channels: ["room:*", "other:*"] });
    const refreshed = await client.refresh(fresh);
    assert.ok(refreshed.expiresAt > login.expiresAt);
    assert.equal(client.expiresAt, refreshed.expiresAt, "expiresAt follows the refresh");
    assert.equal(client.options.token, fresh, "later reconnects use the new token");
    await client.join("other:yes"); // the refreshed token's channels are in force
    await rejectsWith(client.refresh(mint({ sub: "not-lou", exp: now() + 600 })), "UNAUTHORIZED");
    assert.equal(client.state, "online", "a refused refresh keeps the connection");
    assert.equal(client.expiresAt, refreshed.expiresAt, "and the old token stays in force");
    assert.equal(client.options.token, fresh);
  });
});
