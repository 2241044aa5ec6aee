// The roster invariant (PROTOCOL §4) through rollcall.js: after random churn of several
// clients — joins with and without state, leaves, setState (some with ttlSeconds),
// removeState, connections cut and resumed — every client's `Roster` equals what
// `getOnlineUsers` returns once the channel is quiet. In announce mode, and in interval mode
// with a small `presence.maxInstantEvents` so that the channel switches back and forth.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Broker } from "./support/broker.mjs";
import { ClientPool, membersOf, plain } from "./support/clients.mjs";
import { eventually, nextEvent } from "./support/eventually.mjs";
import { CuttableProxy } from "./support/proxy.mjs";

const CHANNEL = "room:churn";
const USERS = ["ada", "bo", "cy", "di", "ed", "flo", "Gus", "h\u00e9l\u00e8ne"];
const STEPS = 160;

/** A small seeded PRNG (mulberry32), so that a failing run can be repeated with its seed. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Runs the churn against `broker` and checks the invariant; returns what the rosters saw.
 * @returns {Promise<{modes: Set<string>, eventTypes: Set<string>, resumes: number}>}
 */
async function churn(broker, seed) {
  const rand = random(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const pool = new ClientPool();
  const proxies = [];
  const seen = { modes: new Set(), eventTypes: new Set(), resumes: 0 };
  try {
    // A watcher that stays, and one client per user through its own cuttable proxy.
    const watcher = await pool.open(broker.url, "watcher");
    const watcherRoom = await watcher.join(CHANNEL);
    const clients = [];
    for (const user of USERS) {
      const proxy = await CuttableProxy.start(broker.port);
      proxies.push(proxy);
      const client = await pool.open(proxy.url, user, { presenceTimeout: 60 });
      client.on("login", (login) => (seen.resumes += login.resumed ? 1 : 0));
      client.on("presence", ({ event }) => {
        seen.eventTypes.add(event.type);
        if (event.mode) seen.modes.add(event.mode);
      });
      clients.push({ client, proxy, joined: false });
    }

    for (let step = 0; step < STEPS; step++) {
      const entry = pick(clients);
      const { client } = entry;
      if (client.state !== "online") continue; // a cut one is still resuming
      const key = pick(["a", "b", "c"]);
      const value = String(Math.floor(rand() * 5));
      const ttl = rand() < 0.3 ? { ttlSeconds: 0.2 + rand() * 0.6 } : {};
      const roll = rand();
      try {
        if (!entry.joined) {
          await client.join(CHANNEL, rand() < 0.5 ? { state: { [key]: value }, ...ttl } : {});
          entry.joined = true;
        } else if (roll < 0.15) {
          await client.leave(CHANNEL);
          entry.joined = false;
        } else if (roll < 0.55) {
          await client.setState(CHANNEL, { [key]: value }, "message", ttl);
        } else if (roll < 0.75) {
          await client.removeState(CHANNEL, [key]);
        } else if (roll < 0.85) {
          const dropped = nextEvent(client, "connection", (c) => c.state === "reconnecting");
          entry.proxy.cut(); // resumes by itself (held session, no leave)
          await dropped;
        } else {
          await client.publish(CHANNEL, { step });
        }
      } catch (error) {
        if (error.code !== "DISCONNECTED") throw error;
      }
    }

    await eventually(() => clients.every(({ client }) => client.state === "online"), { message: "every client online again" });
    // Last, every member sets a key that expires: the rosters must lose it by themselves.
    for (const { client } of clients.filter((entry) => entry.joined)) {
      await client.setState(CHANNEL, { z: "last" }, "message", { ttlSeconds: 0.3 });
    }
    await eventually(async () => [...(await watcher.getAllOnlineUsers(CHANNEL)).values()].every((state) => !("z" in state)), {
      message: "the last keys expired in the broker",
    });
    const observers = [{ client: watcher }, ...clients.filter(({ client }) => client.rosters.size > 0)];
    assert.ok(observers.length >= 2);
    for (const { client } of observers) {
      const roster = client.rosters.get(`message\u0000${CHANNEL}`);
      let truth;
      await eventually(
        async () => {
          truth = plain(await client.getAllOnlineUsers(CHANNEL));
          return JSON.stringify(membersOf(roster)) === JSON.stringify(truth);
        },
        { message: `seed ${seed}: ${client.userId}'s roster equals getOnlineUsers`, timeoutMs: 15_000, intervalMs: 100 },
      ).catch((error) => {
        assert.deepEqual(membersOf(roster), truth, error.message);
      });
    }
    // A late joiner's snapshot agrees too.
    const late = await pool.open(broker.url, "late");
    const lateRoom = await late.join(CHANNEL);
    await eventually(async () => {
      const truth = plain(await late.getAllOnlineUsers(CHANNEL));
      return lateRoom.seq !== null && JSON.stringify(membersOf(lateRoom)) === JSON.stringify(truth);
    }, { message: `seed ${seed}: the late joiner's roster`, timeoutMs: 15_000, intervalMs: 100 });
    // The watcher's copy of late's join may still be on its way (a busy session's events can
    // wait up to 4 ms to share a frame; late's own replies do not wait).
    await eventually(() => watcherRoom.members.has("late") || watcherRoom.mode === "interval", {
      message: `seed ${seed}: the watcher sees the late joiner`,
    });
    return seen;
  } finally {
    pool.closeAll();
    for (const proxy of proxies) await proxy.close();
  }
}

describe("roster model equals getOnlineUsers after random churn", () => {
  /** @type {Broker} */ let announce;
  /** @type {Broker} */ let interval;

  before(async () => {
    announce = await Broker.start();
    interval = await Broker.start({ presence: { maxInstantEvents: 3, hysteresis: 1, intervalSeconds: 0.2 } });
  });
  after(async () => {
    await announce.dispose();
    await interval.dispose();
  });

  test("announce mode", async () => {
    const seed = Number(process.env.CHURN_SEED ?? Date.now() % 100000);
    const seen = await churn(announce, seed);
    assert.deepEqual([...seen.modes], ["announce"], `seed ${seed}`);
    for (const type of ["snapshot", "join", "leave", "stateChanged"]) assert.ok(seen.eventTypes.has(type), `seed ${seed}: saw ${type}`);
    assert.ok(seen.resumes > 0, `seed ${seed}: some cut connections resumed`);
  });

  test("interval mode (maxInstantEvents 3, intervalSeconds 0.2)", async () => {
    const seed = Number(process.env.CHURN_SEED ?? Date.now() % 100000);
    const seen = await churn(interval, seed);
    assert.ok(seen.modes.has("interval"), `seed ${seed}: the channel went to interval mode`);
    assert.ok(seen.eventTypes.has("interval"), `seed ${seed}: interval events`);
    assert.ok(seen.resumes > 0, `seed ${seed}: some cut connections resumed`);
  });
});
