// The JavaScript client's soak (issue 32): N clients of `@rollcall/client` (the installed
// tarball, as the tests use it) against the real broker, each through one ChaosProxy that cuts
// and freezes links at random for the whole run, while every client joins, leaves and sets its
// state in random channels. Then the faults stop and the soak waits until every client is
// online with every roster `joined`, and checks:
//
// - every client's roster of every channel it is in equals the broker's listing (server API
//   `getOnlineUsers` with states, every page): members and states;
// - the broker's members of each channel are exactly the users whose client holds that channel
//   (no ghost, nobody missing) — what the apps asked for, offline calls included;
// - no client is wrongly `online`: each one's `ping` is answered on its link, and the broker
//   holds exactly one live session per client and no held one.
//
// Everything random comes from one seeded generator (mulberry32); a failure prints the seed,
// and `--seed N` (or SOAK_SEED) runs the same schedule again (timings still differ).
//
//   node --experimental-websocket Tests/js/soak/soak.mjs [--seconds 600] [--clients 200] [--seed N] [--json FILE]
//
// `make soak-js` runs it for 10 minutes with 200 clients; `Tests/js/soak.test.mjs` runs a short one.

import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

import { Broker } from "../support/broker.mjs";
import { RollcallClient, channelKey } from "../support/rollcall.mjs";
import { ChaosProxy } from "./chaos-proxy.mjs";

/** A small seeded PRNG (mulberry32). */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const API_KEY = "soak-api-key-0123456789abcdef";

/**
 * The broker's settings for the soak: fast heartbeats, so that a frozen link is found dead by
 * both sides within seconds, and a short presence timeout, so that sessions that could not be
 * resumed end soon (they would keep their user in channels the app has left until then).
 */
export const SOAK_BROKER_CONFIG = {
  heartbeat: { intervalSeconds: 1, timeoutSeconds: 3 },
  presence: { timeoutSeconds: 6 },
  api: { keys: [API_KEY] },
};

/** One server API call; returns `result` or throws with the error. */
async function api(port, op, body) {
  const response = await fetch(`http://127.0.0.1:${port}/api/v1/${op}`, {
    method: "POST",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!answer.ok) throw new Error(`${op}: ${answer.error.code} ${answer.error.message}`);
  return answer.result;
}

/** The broker's roster of a channel (every page), as a Map userId → state. */
async function listing(port, channel) {
  const users = new Map();
  let page = null;
  do {
    const result = await api(port, "getOnlineUsers", { channel, includeState: true, pageSize: 1000, ...(page ? { page } : {}) });
    for (const user of result.users) users.set(user.userId, user.state ?? {});
    page = result.nextPage;
  } while (page);
  return users;
}

/** Text of a Map userId → state, sorted, for comparing and printing. */
function text(members) {
  return JSON.stringify([...members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Runs the soak.
 * @param {{seconds?: number, clients?: number, channels?: number, seed?: number, log?: (line: string) => void,
 *   faults?: object, settleSeconds?: number}} [options]
 * @returns {Promise<object>} the figures; `ok` false with `problems` when an invariant failed
 */
export async function runSoak({
  seconds = 600, clients: clientCount = 200, channels: channelCount = 20, seed = Date.now() % 2 ** 31,
  log = () => {}, faults = {}, settleSeconds = 120,
} = {}) {
  const rand = random(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const channels = Array.from({ length: channelCount }, (_, n) => `soak:${n}`);
  const figures = {
    seed, seconds, clients: clientCount, channels: channelCount,
    actions: { join: 0, leave: 0, setState: 0, removeState: 0, failed: 0 },
    reconnects: 0, resumed: 0, newSessions: 0, resyncs: 0, retrying: 0, rejoinErrors: 0, requestTimeouts: 0,
    proxy: null, convergeSeconds: null, mismatches: null, wronglyOnline: null, ok: false, problems: [],
  };
  const broker = await Broker.start(SOAK_BROKER_CONFIG);
  const proxy = await ChaosProxy.start(broker.port, rand);
  /** @type {{client: RollcallClient, userId: string}[]} */
  const entries = [];
  const hooked = new WeakSet();
  const hook = (roster) => {
    if (!roster || hooked.has(roster)) return;
    hooked.add(roster);
    roster.on("change", ({ type }) => (figures.resyncs += type === "resync" ? 1 : 0));
    roster.on("status", ({ status }) => {
      if (status === "retrying") figures.retrying += 1;
      if (status === "error") figures.rejoinErrors += 1;
    });
  };
  let stopping = false;
  const loops = [];
  try {
    log(`soak: seed ${seed}, ${clientCount} clients, ${channelCount} channels, ${seconds} s of faults (broker on ${broker.port})`);
    for (let n = 0; n < clientCount; n++) {
      const userId = `u${String(n).padStart(3, "0")}`;
      const client = new RollcallClient(proxy.url, {
        userId, platform: "other", backoff: { initialMs: 200, maxMs: 3000, factor: 2 }, requestTimeoutMs: 5000,
      });
      client.on("connection", ({ state }) => (figures.reconnects += state === "reconnecting" ? 1 : 0));
      client.on("login", (login) => {
        if (login.resumed) figures.resumed += 1;
        else figures.newSessions += 1;
      });
      client.on("error", () => {});
      entries.push({ client, userId });
    }
    await Promise.all(entries.map(({ client }) => client.open()));
    figures.newSessions -= clientCount; // the first logins are not reconnects
    // Everyone starts in two channels.
    await Promise.all(entries.map(async ({ client }) => {
      for (const channel of [pick(channels), pick(channels)]) {
        if (client.rosters.has(channelKey(channel))) continue;
        const roster = client.join(channel, { state: { n: String(Math.floor(rand() * 10)) } });
        hook(client.rosters.get(channelKey(channel)));
        await roster;
      }
    }));
    log(`soak: ${clientCount} clients online; faults start`);

    // The apps: each client acts every 1–6 s.
    const act = async ({ client }) => {
      const mine = [...client.rosters.values()].map((roster) => roster.channel);
      const roll = rand();
      const key = pick(["a", "b", "c"]);
      const value = String(Math.floor(rand() * 100));
      if (roll < 0.2 || mine.length === 0) {
        const channel = pick(channels);
        figures.actions.join += 1;
        const joined = client.join(channel, rand() < 0.5 ? { state: { [key]: value } } : {});
        hook(client.rosters.get(channelKey(channel)));
        await joined;
      } else if (roll < 0.35 && mine.length > 1) {
        figures.actions.leave += 1;
        await client.leave(pick(mine));
      } else if (roll < 0.85) {
        figures.actions.setState += 1;
        const ttl = rand() < 0.15 ? { ttlSeconds: 0.5 + rand() * 2 } : {};
        await client.setState(pick(mine), { [key]: value }, "message", ttl);
      } else {
        figures.actions.removeState += 1;
        await client.removeState(pick(mine), [key]);
      }
    };
    for (const entry of entries) {
      loops.push((async () => {
        while (!stopping) {
          await new Promise((resolve) => setTimeout(resolve, 1000 + rand() * 5000));
          if (stopping) break;
          try {
            await act(entry);
          } catch (error) {
            // DISCONNECTED / TIMEOUT for actions on a link that went away: expected under faults.
            figures.actions.failed += 1;
            if (error?.code === "TIMEOUT") figures.requestTimeouts += 1;
          }
        }
      })());
    }
    proxy.startFaults(faults);
    const started = Date.now();
    const progress = setInterval(() => {
      const online = entries.filter(({ client }) => client.state === "online").length;
      log(`soak: ${Math.round((Date.now() - started) / 1000)} s: ${online}/${clientCount} online, ${proxy.openLinks} links, `
        + `${proxy.counts.cuts} cuts, ${proxy.counts.freezes} freezes, ${figures.reconnects} reconnects, ${figures.resyncs} resyncs`);
    }, 30_000);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    clearInterval(progress);

    // Quiet: no more faults, the apps stop; wait for every client and roster to settle.
    stopping = true;
    proxy.stopFaults();
    const quietAt = Date.now();
    await Promise.all(loops);
    log(`soak: faults stopped (${JSON.stringify(proxy.counts)}); waiting for convergence`);
    let last = null;
    while (Date.now() - quietAt < settleSeconds * 1000) {
      last = await check(broker, entries, channels);
      if (last.problems.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    figures.convergeSeconds = last.problems.length === 0 ? (Date.now() - quietAt) / 1000 : null;
    figures.mismatches = last.mismatches;
    figures.problems = last.problems.slice(0, 20);
    // Not wrongly online: every client's link answers, and the broker has one live session each.
    const pings = await Promise.allSettled(entries.map(({ client }) => client.ping()));
    figures.wronglyOnline = pings.filter((result) => result.status === "rejected").length;
    const live = await broker.metric('rollcall_sessions{state="live"}');
    const held = await broker.metric('rollcall_sessions{state="held"}');
    figures.liveSessions = live;
    figures.heldSessions = held;
    if (figures.wronglyOnline > 0) figures.problems.push(`${figures.wronglyOnline} client(s) online whose ping failed`);
    if (live !== clientCount || held !== 0) figures.problems.push(`broker sessions: ${live} live, ${held} held (want ${clientCount}, 0)`);
    figures.proxy = { ...proxy.counts };
    figures.ok = figures.problems.length === 0;
    return figures;
  } finally {
    stopping = true;
    for (const { client } of entries) client.close();
    await proxy.close();
    await broker.dispose();
  }
}

/**
 * One look at the invariants: returns the problems found (empty when converged) and the number
 * of rosters that differ from the broker's listing.
 */
async function check(broker, entries, channels) {
  const problems = [];
  let mismatches = 0;
  for (const { client, userId } of entries) {
    if (client.state !== "online") problems.push(`${userId} is ${client.state}`);
    for (const roster of client.rosters.values()) {
      if (roster.status !== "joined") problems.push(`${userId} ${roster.channel}: ${roster.status}`);
    }
  }
  for (const channel of channels) {
    const listed = await listing(broker.port, channel);
    const intended = entries.filter(({ client }) => client.rosters.has(channelKey(channel))).map(({ userId }) => userId).sort();
    const members = [...listed.keys()].sort();
    if (JSON.stringify(members) !== JSON.stringify(intended)) {
      problems.push(`${channel}: broker lists [${members.join(",")}], clients hold [${intended.join(",")}]`);
    }
    const expected = text(listed);
    for (const { client, userId } of entries) {
      const roster = client.rosters.get(channelKey(channel));
      if (!roster) continue;
      const seen = text(roster.members);
      if (seen !== expected) {
        mismatches += 1;
        problems.push(`${userId}'s roster of ${channel} differs from the listing: ${seen} vs ${expected}`);
      }
    }
  }
  return { problems, mismatches };
}

/** `--name value` arguments. */
function argument(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const seedText = argument("seed", process.env.SOAK_SEED);
  const options = {
    seconds: Number(argument("seconds", 600)),
    clients: Number(argument("clients", 200)),
    seed: seedText ? Number(seedText) : Date.now() % 2 ** 31,
    log: (line) => console.log(`[${new Date().toISOString()}] ${line}`),
  };
  const startedAt = Date.now();
  let figures;
  try {
    figures = await runSoak(options);
  } catch (error) {
    console.error(`soak: FAILED with seed ${options.seed} (replay: --seed ${options.seed}): ${error.stack}`);
    process.exit(1);
  }
  figures.wallSeconds = Math.round((Date.now() - startedAt) / 1000);
  const jsonPath = argument("json", null);
  if (jsonPath) writeFileSync(jsonPath, JSON.stringify(figures, null, 2));
  console.log(JSON.stringify(figures, null, 2));
  if (!figures.ok) {
    console.error(`soak: FAILED with seed ${options.seed} (replay: --seed ${options.seed}):\n  ${figures.problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`soak: PASS (seed ${options.seed}): ${figures.clients} clients, ${figures.proxy.cuts} cuts, ${figures.proxy.freezes} freezes, `
    + `${figures.resyncs} resyncs, ${figures.mismatches} mismatches, converged in ${figures.convergeSeconds} s`);
  process.exit(0);
}
