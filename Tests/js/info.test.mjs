// `info` (PROTOCOL 1.1 §3: a JSON object the token's issuer vouches for) in rollcall.js's
// roster model, from every listing that carries it: `join` events, snapshot entries,
// `getOnlineUsers` pages (completing a truncated snapshot, and asked directly), and
// `interval.joinInfo`. First the Roster alone on hand-made events, then the real broker in
// jwt mode with tokens that carry `info`.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Roster } from "./support/rollcall.mjs";
import { Broker } from "./support/broker.mjs";
import { ClientPool, plain } from "./support/clients.mjs";
import { eventually, record } from "./support/eventually.mjs";
import { SECRET, tokenFor } from "./support/jwt.mjs";

const ANN = { name: "Ann Example", role: "host" };
const BOB = { name: "Bob" };

const base = { event: "presence", channel: "room:i", channelType: "message", mode: "announce", timestamp: 1 };

describe("Roster.info on hand-made events", () => {
  test("snapshot, join, leave, timeout, interval joinInfo and pages set and clear info", () => {
    const roster = new Roster("room:i", "message", "me");
    roster.apply({ ...base, type: "snapshot", seq: 1, occupancy: 2, snapshot: [{ userId: "me", state: {} }, { userId: "ann", state: {}, info: ANN }] });
    assert.deepEqual(plain(roster.info), { ann: ANN });
    roster.apply({ ...base, type: "join", seq: 2, occupancy: 3, publisher: "bob", state: {}, info: BOB });
    roster.apply({ ...base, type: "join", seq: 3, occupancy: 4, publisher: "cat", state: {} });
    assert.deepEqual(plain(roster.info), { ann: ANN, bob: BOB }, "a member without info has no entry");
    roster.apply({ ...base, type: "stateChanged", seq: 4, occupancy: 4, publisher: "bob", state: { a: "1" } });
    assert.deepEqual(roster.info.get("bob"), BOB, "a state change keeps the info");
    roster.apply({ ...base, type: "leave", seq: 5, occupancy: 3, publisher: "bob" });
    roster.apply({ ...base, type: "timeout", seq: 6, occupancy: 2, publisher: "ann" });
    assert.deepEqual(plain(roster.info), {});
    roster.apply({
      ...base, type: "interval", mode: "interval", seq: 7, occupancy: 4,
      interval: { join: ["ann", "dan"], leave: [], timeout: [], stateChanged: [], joinInfo: { ann: ANN } },
    });
    assert.deepEqual(plain(roster.info), { ann: ANN });
    roster.apply({ ...base, type: "interval", mode: "interval", seq: 8, occupancy: 3, interval: { join: [], leave: ["ann"], timeout: [], stateChanged: [] } });
    assert.deepEqual(plain(roster.info), {});
    roster.applyPage([{ userId: "eve", state: {}, info: { name: "Eve" } }, { userId: "fay", state: {} }]);
    assert.deepEqual(plain(roster.info), { eve: { name: "Eve" } });
    roster.apply({ ...base, type: "snapshot", seq: 9, occupancy: 1, snapshot: [{ userId: "me", state: {} }] });
    assert.deepEqual(plain(roster.info), {}, "a snapshot replaces all info");
  });
});

describe("info from the broker (jwt mode)", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  const open = (userId, info) => pool.open(broker.url, userId, { token: tokenFor(userId, 600, info ? { info } : {}).token });

  before(async () => {
    broker = await Broker.start({
      auth: { mode: "jwt", secret: SECRET },
      // Snapshots of more than 2 members are truncated (rollcall.js completes them with
      // getOnlineUsers pages); more than 5 members switch a channel to interval mode.
      presence: { snapshotMaxMembers: 2, maxInstantEvents: 5, hysteresis: 1, intervalSeconds: 0.2 },
    });
  });
  after(async () => {
    pool.closeAll();
    await broker.dispose();
  });

  test("a join event carries the joiner's info; the snapshot of a later joiner carries it too", async () => {
    const obs = await open("i-obs");
    const ann = await open("i-ann", ANN);
    const observed = await obs.join("room:join");
    const seen = record(obs, "presence");
    await ann.join("room:join");
    await eventually(() => observed.members.has("i-ann"), { message: "obs sees ann join" });
    const join = seen.events.map((p) => p.event).find((e) => e.type === "join" && e.publisher === "i-ann");
    assert.deepEqual(join.info, ANN, "the join event carries info");
    assert.deepEqual(plain(observed.info), { "i-ann": ANN });

    const late = await open("i-late");
    const lateRoom = await late.join("room:join");
    await eventually(() => lateRoom.seq !== null && lateRoom.members.size === 3, { message: "late's snapshot" });
    assert.deepEqual(plain(lateRoom.info), { "i-ann": ANN }, "from the snapshot (2 members shown, the rest from a page)");
    const annRoom = ann.rosters.values().next().value;
    await eventually(() => annRoom.members.size === 3);
    assert.deepEqual(plain(annRoom.info), { "i-ann": ANN }, "own info, from the own snapshot");
  });

  test("getOnlineUsers entries carry info, with or without includeState", async () => {
    const bob = await open("i-bob", BOB);
    const cy = await open("i-cy");
    await bob.join("room:list");
    await cy.join("room:list");
    const withState = await cy.getOnlineUsers("room:list");
    assert.deepEqual(withState.users, [{ userId: "i-bob", state: {}, info: BOB }, { userId: "i-cy", state: {} }]);
    const withoutState = await cy.getOnlineUsers("room:list", { includeState: false });
    assert.deepEqual(withoutState.users, [{ userId: "i-bob", info: BOB }, { userId: "i-cy" }]);
  });

  test("a truncated snapshot completed by getOnlineUsers pages brings the info of the members on the pages", async () => {
    // Byte order: i-p1, i-p2 in the snapshot (2 shown), i-p3 and i-p4 (with info) on a page.
    const members = [await open("i-p1"), await open("i-p2"), await open("i-p3", { name: "Three" }), await open("i-p4", { name: "Four" })];
    for (const client of members) await client.join("room:pages");
    const joiner = await open("i-p0");
    const roster = await joiner.join("room:pages");
    const changes = record(roster, "change");
    await eventually(() => roster.seq !== null && !roster.loading && roster.members.size === 5, { message: "snapshot completed" });
    const paged = changes.events.filter((c) => c.type === "page").flatMap((c) => c.changes.map((x) => x.userId));
    assert.ok(paged.includes("i-p4"), `i-p4 came from a page (pages: ${paged})`);
    assert.deepEqual(plain(roster.info), { "i-p3": { name: "Three" }, "i-p4": { name: "Four" } });
  });

  test("interval mode: interval.joinInfo gives the joiners' info", async () => {
    const watcher = await open("i-w");
    const room = await watcher.join("room:busy");
    for (const id of ["i-w1", "i-w2", "i-w3", "i-w4", "i-w5"]) await (await open(id)).join("room:busy");
    await eventually(() => room.mode === "interval" && room.members.size === 6, { message: "interval mode" });
    const seen = record(watcher, "presence");
    const dee = await open("i-dee", { name: "Dee" });
    await dee.join("room:busy");
    await eventually(() => room.members.has("i-dee"), { message: "dee arrives by an interval event" });
    const interval = seen.events.map((p) => p.event).find((e) => e.type === "interval" && e.interval.join.includes("i-dee"));
    assert.ok(interval, "dee's join came in an interval event");
    assert.deepEqual(interval.interval.joinInfo, { "i-dee": { name: "Dee" } });
    assert.deepEqual(plain(room.info), { "i-dee": { name: "Dee" } });
  });
});
