// @rollcall/react's presenceStore.js (the React-free half of usePresence; imported from the
// installed tarball as "@rollcall/react/presenceStore") against the real broker: join on the
// first subscriber, stable snapshots, typing with a TTL, StrictMode's
// subscribe/unsubscribe/subscribe without a leave, leave after the last subscriber, a refused
// join going error → retrying → error.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { installedPackages } from "./support/package.mjs";
import { channelKey } from "./support/rollcall.mjs";
import { Broker } from "./support/broker.mjs";
import { ClientPool } from "./support/clients.mjs";
import { eventually } from "./support/eventually.mjs";

const { createPresenceStore } = await import(pathToFileURL(join(installedPackages().project, "store-entry.mjs")).href);

describe("presenceStore (usePresence without React)", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  let alice, bob;

  before(async () => {
    broker = await Broker.start();
    alice = await pool.open(broker.url, "alice");
    bob = await pool.open(broker.url, "bob");
  });
  after(async () => {
    pool.closeAll();
    await broker.dispose();
  });

  test("the first subscriber joins; snapshots follow the roster and keep their identity when nothing changed", async () => {
    const store = createPresenceStore(alice, "room:s", { state: { mood: "ok" } });
    assert.equal(store.getSnapshot().status, "idle");
    let calls = 0;
    const stop = store.subscribe(() => calls++);
    await eventually(() => store.getSnapshot().status === "joined" && store.getSnapshot().members.length === 1);
    const first = store.getSnapshot();
    assert.equal(store.getSnapshot(), first, "same object while nothing changes");
    assert.deepEqual(first.members.map(({ userId, state, typing, self }) => ({ userId, state, typing, self })), [
      { userId: "alice", state: { mood: "ok" }, typing: false, self: true },
    ]);
    assert.equal(first.mode, "announce");
    assert.ok(Object.isFrozen(first));

    const bobStore = createPresenceStore(bob, "room:s");
    const stopBob = bobStore.subscribe(() => {});
    await eventually(() => store.getSnapshot().occupancy === 2 && store.getSnapshot().members.length === 2);
    assert.deepEqual(store.getSnapshot().members.map((m) => m.userId), ["alice", "bob"]);
    assert.ok(calls >= 2);

    await bobStore.setState({ seat: "B2" });
    await eventually(() => store.getSnapshot().members[1].state.seat === "B2");

    // Typing: throttled, shown in `typing` (others only), gone by itself after the TTL.
    const typingStore = createPresenceStore(bob, "room:s", { typingTtlSeconds: 0.4, typingThrottleMs: 10_000 });
    const stopTyping = typingStore.subscribe(() => {});
    assert.ok(typingStore.setTyping() instanceof Promise);
    assert.equal(typingStore.setTyping(), null, "throttled");
    await eventually(() => store.getSnapshot().typing.join() === "bob", { message: "alice sees bob typing" });
    assert.equal(store.getSnapshot().members[1].typing, true);
    assert.deepEqual(typingStore.getSnapshot().typing, [], "one's own typing is not in `typing`");
    await eventually(() => store.getSnapshot().typing.length === 0, { message: "typing expires" });
    await eventually(() => typingStore.getSnapshot().members.every((m) => !m.typing), { message: "bob's own entry too" });

    typingStore.setTyping(false);
    stopTyping();
    stopBob();
    stop();
  });

  test("StrictMode's unsubscribe + subscribe does not leave; the last unsubscribe leaves", async () => {
    const store = createPresenceStore(alice, "room:strict", { leaveDelayMs: 50 });
    const watcher = createPresenceStore(bob, "room:strict", { leave: false });
    const stopWatcher = watcher.subscribe(() => {});
    const stopFirst = store.subscribe(() => {});
    stopFirst();
    const stop = store.subscribe(() => {});
    await eventually(() => watcher.getSnapshot().members.some((m) => m.userId === "alice"));
    const joins = [];
    const off = bob.rosters.get(channelKey("room:strict")).on("change", (c) => joins.push(c.type));
    // A second store of the same channel shares the membership.
    const second = createPresenceStore(alice, "room:strict", { leaveDelayMs: 0 });
    const stopSecond = second.subscribe(() => {});
    stopSecond();
    await alice.ping();
    await bob.ping();
    assert.ok(alice.rosters.has(channelKey("room:strict")), "still in the channel: one store still holds it");
    stop();
    await eventually(() => !watcher.getSnapshot().members.some((m) => m.userId === "alice"), { message: "alice left" });
    assert.equal(alice.rosters.has(channelKey("room:strict")), false);
    assert.deepEqual(joins, ["leave"], "no leave or rejoin before the last unsubscribe");
    off();
    stopWatcher();
  });

  test("a refused join goes idle → joining → error, then retrying after the backoff (and error again)", async () => {
    const store = createPresenceStore(alice, "room:bad", { channelType: "video" });
    assert.equal(store.getSnapshot().status, "idle");
    const seen = [];
    const stop = store.subscribe(() => {
      const { status } = store.getSnapshot();
      if (seen.at(-1) !== status) seen.push(status);
    });
    await eventually(() => seen.filter((status) => status === "error").length >= 2, { message: "error, retried, error", timeoutMs: 5000 });
    assert.deepEqual(seen.slice(0, 4), ["joining", "error", "retrying", "error"]);
    assert.equal(store.getSnapshot().error.code, "INVALID_ARGUMENT");
    assert.equal(alice.rosters.has(channelKey("room:bad", "video")), false, "a refused join leaves no roster");
    stop();
    assert.equal(store.getSnapshot().status, "error");
  });
});
