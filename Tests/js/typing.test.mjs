// Typing indicators with per-key TTL (PROTOCOL 1.1 §4): `setState(..., {ttlSeconds})` keys
// leave the other members' rosters by themselves (a broker stateChanged), and this client's
// own roster entry too (rollcall.js expires them locally: no event about oneself arrives).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Broker } from "./support/broker.mjs";
import { ClientPool, membersOf } from "./support/clients.mjs";
import { eventually, nextEvent } from "./support/eventually.mjs";

describe("typing with ttlSeconds", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  let alice, bob, aliceRoom, bobRoom;

  before(async () => {
    broker = await Broker.start();
    alice = await pool.open(broker.url, "alice");
    bob = await pool.open(broker.url, "bob");
    aliceRoom = await alice.join("room:t");
    bobRoom = await bob.join("room:t", { state: { mood: "calm" } });
    await eventually(() => aliceRoom.members.has("bob") && bobRoom.seq !== null);
  });
  after(async () => {
    pool.closeAll();
    await broker.dispose();
  });

  test("the key appears for the other member, then disappears by itself, never before the TTL", async () => {
    const sent = Date.now();
    const reply = await bob.setState("room:t", { typing: "1" }, "message", { ttlSeconds: 0.5 });
    assert.deepEqual(reply.state, { mood: "calm", typing: "1" });
    assert.equal(bobRoom.members.get("bob").typing, "1");
    await eventually(() => aliceRoom.members.get("bob")?.typing === "1", { message: "alice sees bob typing" });
    await eventually(() => !("typing" in aliceRoom.members.get("bob")), { message: "typing expires for alice" });
    assert.ok(Date.now() - sent >= 490, `expired after ${Date.now() - sent} ms`);
    assert.deepEqual(aliceRoom.members.get("bob"), { mood: "calm" }, "other keys stay");
    await eventually(() => !("typing" in bobRoom.members.get("bob")), { message: "typing expires in bob's own roster" });
    assert.deepEqual(membersOf(bobRoom), membersOf(aliceRoom));
  });

  test("setting the key again resets its deadline", async () => {
    await bob.setState("room:t", { typing: "1" }, "message", { ttlSeconds: 0.6 });
    await eventually(() => aliceRoom.members.get("bob")?.typing === "1");
    const again = Date.now();
    await bob.setState("room:t", { typing: "1" }, "message", { ttlSeconds: 0.6 });
    const expired = nextEvent(aliceRoom, "change", (c) => c.changes.some((ch) => ch.userId === "bob" && !("typing" in ch.state)), 5000);
    await expired;
    assert.ok(Date.now() - again >= 590, `expired ${Date.now() - again} ms after the second call`);
  });

  test("setting the key without ttlSeconds clears its deadline; removeState clears it too", async () => {
    await bob.setState("room:t", { typing: "1" }, "message", { ttlSeconds: 0.3 });
    await bob.setState("room:t", { typing: "1" });
    // A second key with a later deadline: once it is gone, typing's old deadline is long past.
    await bob.setState("room:t", { probe: "1" }, "message", { ttlSeconds: 0.8 });
    await eventually(() => aliceRoom.members.get("bob")?.probe === "1");
    await eventually(() => !("probe" in aliceRoom.members.get("bob")), { message: "probe expires" });
    await eventually(() => !("probe" in bobRoom.members.get("bob")), { message: "probe expires in bob's roster" });
    assert.equal(aliceRoom.members.get("bob").typing, "1", "typing has no deadline any more");
    assert.equal(bobRoom.members.get("bob").typing, "1");
    await bob.removeState("room:t", ["typing"]);
    await eventually(() => !("typing" in aliceRoom.members.get("bob")));
    assert.deepEqual(membersOf(bobRoom), membersOf(aliceRoom));
  });

  test("join with state and ttlSeconds: the joined keys expire too", async () => {
    const carl = await pool.open(broker.url, "carl");
    const carlRoom = await carl.join("room:t", { state: { typing: "1", seat: "3" }, ttlSeconds: 0.4 });
    await eventually(() => aliceRoom.members.get("carl")?.typing === "1");
    await eventually(() => Object.keys(aliceRoom.members.get("carl")).length === 0, { message: "both keys expire" });
    await eventually(() => carlRoom.seq !== null && Object.keys(carlRoom.members.get("carl")).length === 0);
  });
});
