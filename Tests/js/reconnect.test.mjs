// Reconnect with backoff: the broker stops (SIGTERM, close 1001), the client says
// `reconnecting` and retries with growing delays; the broker comes back on the same port,
// the client logs in again (a new broker holds no session: not resumed) and joins its
// channels again with its state.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Broker, startBrokerAroundSuite } from "./support/broker.mjs";
import { ClientPool, membersOf } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";

describe("reconnect backoff", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  startBrokerAroundSuite(pool, (started) => (broker = started));

  test("broker stopped: growing delays; broker back on the same port: online again, channels rejoined", async () => {
    const backoff = { initialMs: 50, maxMs: 800, factor: 2 };
    const ann = await pool.open(broker.url, "ann", { backoff });
    const ben = await pool.open(broker.url, "ben", { backoff });
    const annRoom = await ann.join("room:b", { state: { seat: "1" } });
    const benRoom = await ben.join("room:b");
    await eventually(() => annRoom.members.has("ben") && benRoom.members.has("ann"));
    const states = record(ann, "connection");

    const exit = await broker.stop();
    assert.equal(exit.code, 0, "SIGTERM: exit status 0");
    // Five scheduled retries, each refused (nothing listens on the port).
    await eventually(() => states.events.filter((e) => e.delayMs !== undefined).length >= 5, { message: "five retries" });
    const retries = states.events.filter((e) => e.delayMs !== undefined);
    assert.equal(retries[0].code, 1001, "the first drop is the broker's shutdown close");
    assert.equal(ann.state, "reconnecting");
    retries.slice(0, 5).forEach((retry, n) => {
      assert.equal(retry.state, "reconnecting");
      assert.equal(retry.attempt, n + 1);
      const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.factor ** n);
      assert.ok(retry.delayMs >= base / 2 && retry.delayMs <= base, `attempt ${n + 1}: ${retry.delayMs} ms not in [${base / 2}, ${base}]`);
      if (n > 0) assert.ok(retry.delayMs >= retries[n - 1].delayMs, "delays never shrink");
    });
    assert.ok(retries[4].delayMs > retries[0].delayMs * 4, "delays grow");

    const loggedIn = nextEvent(ann, "login", () => true, 15_000);
    await broker.restart();
    const login = await loggedIn;
    assert.equal(login.resumed, false, "a new broker process holds no session");
    await eventually(() => ann.state === "online" && ben.state === "online", { message: "both online" });
    await eventually(
      () => JSON.stringify(membersOf(annRoom)) === JSON.stringify({ ann: { seat: "1" }, ben: {} }) &&
        JSON.stringify(membersOf(benRoom)) === JSON.stringify({ ann: { seat: "1" }, ben: {} }),
      { message: "both rosters rebuilt", timeoutMs: 15_000 },
    );
    assert.deepEqual(plainSorted(await ben.getAllOnlineUsers("room:b")), { ann: { seat: "1" }, ben: {} });
    const afterBack = states.events.at(-1);
    assert.equal(afterBack.state, "online");
  });
});

function plainSorted(map) {
  return Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : 1)));
}
