// Client liveness (PROTOCOL 1.2 §3) through a TCP proxy that freezes a connection without
// closing it (a sleeping laptop, a dead NAT): the login result announces the heartbeat limits;
// on a quiet but healthy link the client pings and stays online; on a frozen one it takes the
// link for dead after `heartbeatTimeoutSeconds` of silence, closes it and resumes its session
// on a new connection (the other user sees no leave); a request with no reply rejects with a
// `RollcallError` whose code is `TIMEOUT`.

import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";

import { Broker, startBrokerAroundSuite } from "./support/broker.mjs";
import { ClientPool, membersOf } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";
import { CuttableProxy } from "./support/proxy.mjs";
import { RollcallError } from "./support/rollcall.mjs";

const HEARTBEAT = { intervalSeconds: 0.4, timeoutSeconds: 1.2 };

describe("liveness through a freezing proxy", () => {
  /** @type {Broker} */ let broker;
  /** @type {CuttableProxy} */ let proxy;
  const pool = new ClientPool();

  startBrokerAroundSuite(pool, (started) => (broker = started), { heartbeat: HEARTBEAT, presence: { timeoutSeconds: 30 } });
  afterEach(async () => {
    pool.closeAll();
    await proxy?.close();
  });

  test("the login result's limits carry heartbeatIntervalSeconds and heartbeatTimeoutSeconds", async () => {
    const alice = await pool.open(broker.url, "alice");
    assert.equal(alice.session.limits.heartbeatIntervalSeconds, HEARTBEAT.intervalSeconds);
    assert.equal(alice.session.limits.heartbeatTimeoutSeconds, HEARTBEAT.timeoutSeconds);
  });

  test("a quiet, healthy link: the client pings after each interval of silence and stays online", async (t) => {
    // The frames the client sends, seen through a WebSocket that records them.
    const sent = [];
    const Original = globalThis.WebSocket;
    globalThis.WebSocket = class extends Original {
      send(data) {
        sent.push(JSON.parse(data));
        super.send(data);
      }
    };
    t.after(() => (globalThis.WebSocket = Original));
    const quiet = await pool.open(broker.url, "quiet");
    const states = record(quiet, "connection");
    const quietMs = 3 * HEARTBEAT.timeoutSeconds * 1000;
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    assert.deepEqual(states.events, [], "no reconnect on a quiet link");
    assert.equal(quiet.state, "online");
    const pings = sent.filter((frame) => frame.op === "ping").length;
    const expected = quietMs / (HEARTBEAT.intervalSeconds * 1000);
    assert.ok(pings >= expected - 3 && pings <= expected + 1, `about one ping per interval: ${pings} in ${quietMs} ms`);
  });

  test("a frozen link is taken for dead after heartbeatTimeoutSeconds: closed, resumed on a new connection, nobody sees a leave", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const carol = await pool.open(proxy.url, "carol");
    const dave = await pool.open(broker.url, "dave");
    const carolRoom = await carol.join("room:frozen", { state: { mood: "ok" } });
    const daveRoom = await dave.join("room:frozen");
    await eventually(() => carolRoom.members.has("dave") && daveRoom.members.has("carol"));
    const daveSees = record(daveRoom, "change");
    const firstLogin = carol.session;

    const frozenAt = Date.now();
    const lost = nextEvent(carol, "connection", (c) => c.state === "reconnecting");
    const resumed = nextEvent(carol, "login", (login) => login.resumed, 15_000);
    proxy.freeze();
    const pending = carol.ping(); // sent into the frozen link: fails with the link
    const detail = await lost;
    const lostAfterMs = Date.now() - frozenAt;
    assert.equal(detail.code, 1006);
    assert.match(detail.reason, /heartbeat timeout/);
    assert.ok(lostAfterMs >= HEARTBEAT.timeoutSeconds * 1000 - 450, `not before the timeout (${lostAfterMs} ms)`);
    assert.ok(lostAfterMs < HEARTBEAT.timeoutSeconds * 1000 + 1000, `soon after the timeout (${lostAfterMs} ms)`);
    await assert.rejects(pending, (error) => error instanceof RollcallError && error.code === "DISCONNECTED");

    const login = await resumed;
    assert.equal(login.sessionId, firstLogin.sessionId, "the held session was resumed");
    await eventually(() => carol.state === "online" && carolRoom.members.has("dave"));
    assert.deepEqual(membersOf(carolRoom), { carol: { mood: "ok" }, dave: {} });
    await carol.setState("room:frozen", { back: "yes" });
    await eventually(() => daveRoom.members.get("carol")?.back === "yes", { message: "dave sees carol's new state" });
    assert.deepEqual(
      daveSees.events.flatMap((c) => c.changes).map((c) => `${c.kind} ${c.userId}`),
      ["state carol"],
      "dave saw only the state change: no leave, timeout or join",
    );
  });

  test("a request with no reply rejects with a RollcallError whose code is TIMEOUT (per call and requestTimeoutMs)", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const erin = await pool.open(proxy.url, "erin", { requestTimeoutMs: 300 });
    proxy.freeze();
    const started = Date.now();
    await assert.rejects(erin.request("ping", {}, { timeoutMs: 150 }), (error) => {
      assert.ok(error instanceof RollcallError);
      assert.equal(error.code, "TIMEOUT");
      return true;
    });
    assert.ok(Date.now() - started < 290, "the per-call timeout applies");
    await assert.rejects(erin.getUserChannels("erin"), (error) => error instanceof RollcallError && error.code === "TIMEOUT");
    assert.equal(erin.state, "online", "a timed-out request alone does not drop the link");
  });
});
