// The token lifecycle of protocol 1.1 (PROTOCOL §3) through rollcall.js's `getToken` option,
// against the real broker in jwt mode:
// - a short token is refreshed on `refreshRequired` without dropping the connection: the
//   session, its membership and its roster stay, nobody sees a leave — while a session with
//   the same short token and no `getToken` is closed with 4401 "token expired";
// - a session closed with 4401 logs in again with a fresh token and joins its channels again;
// - a reconnect refused with UNAUTHORIZED asks `getToken` once more, and gives up after that;
// - `expiresAt`, `refresh()` without a token, `refresh` in auth mode none.

import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";

import { RollcallClient, RollcallError } from "./support/rollcall.mjs";
import { Broker, startBrokerAroundSuite } from "./support/broker.mjs";
import { ClientPool, FAST_BACKOFF } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";
import { SECRET, mint, nowSeconds, tokenFor } from "./support/jwt.mjs";
import { CuttableProxy } from "./support/proxy.mjs";

/** Seconds a "short" token lives: the broker's notice comes at once (< refreshNoticeSeconds). */
const SHORT_SECONDS = 3;

/**
 * A `getToken` that hands out `tokens()` results in turn and counts its calls; `calls` holds
 * what each call returned (or the error it threw).
 */
function tokenSource(next) {
  const source = {
    calls: [],
    getToken: async () => {
      try {
        const token = await next(source.calls.length);
        source.calls.push(token);
        return token;
      } catch (error) {
        source.calls.push(error);
        throw error;
      }
    },
  };
  return source;
}

/** Presence changes of a roster about `userId`, as "kind userId" strings. */
function changesAbout(recorded, userId) {
  return recorded.events.flatMap((c) => c.changes).filter((c) => c.userId === userId).map((c) => `${c.kind} ${c.userId}`);
}

describe("token lifecycle (jwt mode, PROTOCOL 1.1 §3)", () => {
  /** @type {Broker} */ let broker;
  /** @type {CuttableProxy | null} */ let proxy = null;
  const pool = new ClientPool();

  before(async () => {
    // No clock skew: a token that is not refreshed ends right at its exp.
    broker = await Broker.start({ auth: { mode: "jwt", secret: SECRET, clockSkewSeconds: 0, refreshNoticeSeconds: 60 } });
  });
  afterEach(async () => {
    pool.closeAll();
    await proxy?.close();
    proxy = null;
  });
  after(async () => {
    await broker.dispose();
  });

  test("a short token is refreshed on refreshRequired: same session, same roster, no leave seen by the other user", async () => {
    const observer = await pool.open(broker.url, "obs", { token: tokenFor("obs", 600).token });
    const short = tokenFor("ref", SHORT_SECONDS);
    const long = tokenFor("ref", 600, { info: { name: "Ref" } });
    const source = tokenSource((n) => (n === 0 ? short.token : long.token));
    const notices = [];
    const refresher = new RollcallClient(broker.url, { userId: "ref", platform: "other", backoff: FAST_BACKOFF, getToken: source.getToken });
    pool.clients.push(refresher);
    refresher.on("session", (event) => notices.push(event));
    const connection = record(refresher, "connection");
    const refreshed = nextEvent(refresher, "token", ({ expiresAt }) => expiresAt === long.expiresAt);
    const login = await refresher.open();
    assert.equal(login.expiresAt, short.expiresAt, "the login result carries the token's exp in ms");

    // A control session with the same short token and nobody to refresh it.
    const control = new RollcallClient(broker.url, { userId: "ctl", platform: "other", backoff: FAST_BACKOFF, token: tokenFor("ctl", SHORT_SECONDS).token });
    pool.clients.push(control);
    const controlClosed = nextEvent(control, "connection", (c) => c.state === "closed", 20_000);
    await control.open();

    const observed = await observer.join("room:refresh");
    const refresherRoom = await refresher.join("room:refresh", { state: { seat: "7" } });
    await control.join("room:refresh");
    await eventually(() => observed.members.has("ref") && observed.members.has("ctl") && refresherRoom.members.has("obs"), { message: "all in the room" });
    const observerSees = record(observed, "change");

    await refreshed;
    assert.equal(refresher.expiresAt, long.expiresAt, "expiresAt follows the refresh");
    assert.equal(notices.length >= 1 && notices[0].type, "refreshRequired");
    assert.equal(notices[0].expiresAt, short.expiresAt);
    assert.equal(source.calls.length, 2, "getToken: once for the login, once for the refresh");

    // Past the short token's exp: the broker closes the control session with 4401 and the
    // observer sees it leave; the refreshed session goes on.
    const closed = await controlClosed;
    assert.equal(closed.code, 4401);
    assert.equal(closed.reason, "token expired");
    await eventually(() => !observed.members.has("ctl"), { message: "the observer sees ctl leave" });
    assert.deepEqual(changesAbout(observerSees, "ctl"), ["leave ctl"], "an expired session ends like a close frame: leave");

    assert.equal(refresher.state, "online");
    assert.deepEqual(connection.events.map((c) => c.state), ["connecting", "online"], "never dropped");
    assert.ok(Date.now() > short.expiresAt);
    await refresher.ping();
    assert.equal(refresher.session.sessionId, login.sessionId);
    assert.deepEqual(changesAbout(observerSees, "ref"), [], "the observer saw no leave, timeout or join of ref");
    assert.deepEqual(observed.members.get("ref"), { seat: "7" });
    assert.ok(refresherRoom.members.has("obs"));
    const online = await observer.getOnlineUsers("room:refresh");
    assert.deepEqual(online.users.map((u) => u.userId), ["obs", "ref"]);
  });

  test("closed with 4401 (token expired): the client logs in again with a fresh token and joins its channels again", async () => {
    const observer = await pool.open(broker.url, "obs2", { token: tokenFor("obs2", 600).token });
    const short = tokenFor("exp", SHORT_SECONDS);
    let issuerUp = true; // down while the short token runs out: the automatic refresh fails
    let expired = false;
    const source = tokenSource(() => {
      if (expired) return tokenFor("exp", 600).token;
      if (!issuerUp) throw new Error("token issuer unreachable");
      issuerUp = false;
      return short.token;
    });
    const client = new RollcallClient(broker.url, { userId: "exp", platform: "other", backoff: FAST_BACKOFF, getToken: source.getToken });
    pool.clients.push(client);
    const refreshFailed = nextEvent(client, "error", (e) => e.op === "refresh");
    client.on("connection", (c) => {
      if (c.state === "reconnecting" && c.code === 4401) expired = true;
    });
    const first = await client.open();
    const observed = await observer.join("room:expiry");
    const room = await client.join("room:expiry", { state: { seat: "3" } });
    await eventually(() => observed.members.has("exp") && room.members.has("obs2"));
    const observerSees = record(observed, "change");

    const failure = await refreshFailed;
    assert.match(failure.error.message, /issuer unreachable/);
    const closedForExpiry = nextEvent(client, "connection", (c) => c.state === "reconnecting" && c.code === 4401, 20_000);
    const again = nextEvent(client, "login", () => true, 20_000);
    const drop = await closedForExpiry;
    assert.equal(drop.reason, "token expired");
    const login = await again;
    assert.equal(login.resumed, false, "an expired session ended: nothing to resume");
    assert.notEqual(login.sessionId, first.sessionId);
    assert.ok(client.expiresAt > short.expiresAt + 500_000, "the new login's token is the fresh one");
    assert.equal(client.state, "online");
    await eventually(() => observed.members.get("exp")?.seat === "3", { message: "exp back in the room with its state" });
    assert.deepEqual(changesAbout(observerSees, "exp").slice(0, 2), ["leave exp", "join exp"]);
  });

  test("a reconnect refused with UNAUTHORIZED asks getToken once more; the fresh token resumes the session", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const observer = await pool.open(broker.url, "obs3", { token: tokenFor("obs3", 600).token });
    // 1: the first login; 2: after the cut, a token the broker refuses (someone else's);
    // 3: the one more try, with a good token.
    const source = tokenSource((n) => (n === 1 ? tokenFor("mallory", 600).token : tokenFor("una", 600).token));
    const client = new RollcallClient(proxy.url, { userId: "una", platform: "other", backoff: FAST_BACKOFF, getToken: source.getToken });
    pool.clients.push(client);
    const first = await client.open();
    const observed = await observer.join("room:una");
    await client.join("room:una");
    await eventually(() => observed.members.has("una"));
    const observerSees = record(observed, "change");
    const connection = record(client, "connection");

    const resumed = nextEvent(client, "login", () => true, 20_000);
    proxy.cut();
    const login = await resumed;
    assert.equal(source.calls.length, 3, "getToken: the login, the refused reconnect, one more");
    assert.equal(login.resumed, true, "the held session is taken over");
    assert.equal(login.sessionId, first.sessionId);
    assert.equal(client.state, "online");
    const retries = connection.events.filter((c) => c.state === "reconnecting" && c.delayMs !== undefined);
    assert.equal(retries.length, 2, "two scheduled retries: after the cut, after the refusal");
    await client.setState("room:una", { back: "yes" });
    await eventually(() => observed.members.get("una")?.back === "yes");
    assert.deepEqual(changesAbout(observerSees, "una"), ["state una"], "no leave, timeout or join of una");
  });

  test("refused twice in a row: the client gives up (closed) after asking getToken once more", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const source = tokenSource((n) => (n === 0 ? tokenFor("vic", 600).token : tokenFor("not-vic", 600).token));
    const client = new RollcallClient(proxy.url, { userId: "vic", platform: "other", backoff: FAST_BACKOFF, getToken: source.getToken });
    pool.clients.push(client);
    await client.open();
    const closed = nextEvent(client, "connection", (c) => c.state === "closed", 20_000);
    proxy.cut();
    await closed;
    assert.equal(client.state, "closed");
    assert.equal(source.calls.length, 3, "the login, the refused reconnect, one more (refused too)");
    await assert.rejects(client.ping(), (error) => error instanceof RollcallError && error.code === "DISCONNECTED");
  });

  test("without getToken a refused reconnect closes for good, as before", async () => {
    proxy = await CuttableProxy.start(broker.port);
    // Expires while the connection is cut and refused: the reconnect's login is refused.
    const short = tokenFor("wes", 2);
    const client = await pool.open(proxy.url, "wes", { token: short.token });
    const closed = nextEvent(client, "connection", (c) => c.state === "closed", 20_000);
    proxy.refusing = true;
    proxy.cut();
    await eventually(() => Date.now() > short.expiresAt + 1000, { timeoutMs: 10_000, message: "the token has expired" });
    proxy.refusing = false;
    await closed;
    assert.equal(client.state, "closed");
  });

  test("refresh() asks getToken; a refused token keeps the connection and the old expiry", async () => {
    const tokens = [tokenFor("xan", 600), tokenFor("xan", 1200), { token: mint({ sub: "xan", exp: nowSeconds() + 900 }, "wrong-secret") }];
    const source = tokenSource((n) => tokens[n].token);
    const client = new RollcallClient(broker.url, { userId: "xan", platform: "other", backoff: FAST_BACKOFF, getToken: source.getToken });
    pool.clients.push(client);
    await client.open();
    assert.equal(client.expiresAt, tokens[0].expiresAt);
    const { expiresAt } = await client.refresh();
    assert.equal(expiresAt, tokens[1].expiresAt);
    assert.equal(client.expiresAt, tokens[1].expiresAt);
    await assert.rejects(client.refresh(), (error) => error instanceof RollcallError && error.code === "UNAUTHORIZED");
    assert.equal(client.expiresAt, tokens[1].expiresAt);
    assert.equal(client.state, "online");
    assert.equal(client.options.token, tokens[1].token, "reconnects without getToken would use the last good token");
  });

  test("a first login with `token` and `getToken` uses the token and asks getToken only later", async () => {
    const given = tokenFor("yul", 600);
    const source = tokenSource(() => tokenFor("yul", 900).token);
    const client = await pool.open(broker.url, "yul", { token: given.token, getToken: source.getToken });
    assert.equal(client.expiresAt, given.expiresAt);
    assert.equal(source.calls.length, 0);
  });
});

describe("token lifecycle in auth mode none", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  startBrokerAroundSuite(pool, (started) => (broker = started));

  test("expiresAt is null and refresh answers INVALID_REQUEST", async () => {
    const client = await pool.open(broker.url, "zed");
    assert.equal(client.session.expiresAt, null);
    assert.equal(client.expiresAt, null);
    await assert.rejects(client.refresh("anything"), (error) => error instanceof RollcallError && error.code === "INVALID_REQUEST");
    assert.equal(client.state, "online");
  });
});
