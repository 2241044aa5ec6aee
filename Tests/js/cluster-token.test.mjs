// Cluster mode (PROTOCOL §9) with jwt tokens (1.1 §3): a session refreshed through `getToken`
// on one node outlives its first token while a user on another node sees no leave (and does
// see a control session with the same short token leave at its exp); `info` crosses nodes in
// join events and snapshots. Once on one Redis, once on a Redis Cluster of 3 masters.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { RollcallClient } from "./support/rollcall.mjs";
import { Broker } from "./support/broker.mjs";
import { ClientPool, FAST_BACKOFF, plain } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";
import { SECRET, tokenFor } from "./support/jwt.mjs";
import { REDIS_BACKENDS } from "./support/redis.mjs";

for (const backend of REDIS_BACKENDS) describe(`cluster on ${backend.name}: token refresh and info across nodes`, () => {
  /** @type {{url: string, stop(): Promise<void>}} */ let redis;
  /** @type {Broker[]} */ const nodes = [];
  const pool = new ClientPool();

  before(async () => {
    redis = await backend.start();
    const cluster = { redis: redis.url, keyPrefix: "jstoken:", heartbeatSeconds: 0.2, nodeTimeoutSeconds: 1 };
    const auth = { mode: "jwt", secret: SECRET, clockSkewSeconds: 0 };
    for (let index = 0; index < 2; index++) nodes.push(await Broker.start({ cluster, auth }));
  });
  after(async () => {
    pool.closeAll();
    for (const node of nodes) await node.dispose();
    await redis.stop();
  });

  test("refreshed on node 0 past its first exp: the observer on node 1 sees no leave, and sees the control leave", async () => {
    const observer = await pool.open(nodes[1].url, "c-obs", { token: tokenFor("c-obs", 600, { info: { name: "Observer" } }).token });
    const short = tokenFor("c-ref", 3, { info: { name: "Refresher" } });
    const long = tokenFor("c-ref", 600, { info: { name: "Refresher" } });
    let calls = 0;
    const refresher = new RollcallClient(nodes[0].url, {
      userId: "c-ref", platform: "other", backoff: FAST_BACKOFF, getToken: () => (calls++ === 0 ? short.token : long.token),
    });
    pool.clients.push(refresher);
    const refreshed = nextEvent(refresher, "token", ({ expiresAt }) => expiresAt === long.expiresAt);
    const connection = record(refresher, "connection");
    await refresher.open();
    const control = await pool.open(nodes[1].url, "c-ctl", { token: tokenFor("c-ctl", 3).token });
    const controlClosed = nextEvent(control, "connection", (c) => c.state === "closed", 20_000);

    const observed = await observer.join("hall");
    const refresherHall = await refresher.join("hall");
    await control.join("hall");
    await eventually(() => observed.members.has("c-ref") && observed.members.has("c-ctl") && refresherHall.members.has("c-obs"), { message: "all in the hall" });
    assert.deepEqual(plain(observed.info), { "c-obs": { name: "Observer" }, "c-ref": { name: "Refresher" } }, "own info from the snapshot, c-ref's from a join on the other node");
    assert.deepEqual(plain(refresherHall.info), { "c-obs": { name: "Observer" }, "c-ref": { name: "Refresher" } }, "info in the snapshot");
    const seen = record(observed, "change");

    await refreshed;
    assert.equal((await controlClosed).code, 4401);
    await eventually(() => !observed.members.has("c-ctl"), { message: "the control leaves at its exp" });
    assert.ok(Date.now() > short.expiresAt);
    assert.equal(refresher.state, "online");
    assert.deepEqual(connection.events.map((c) => c.state), ["connecting", "online"], "never dropped");
    await refresher.ping();
    const aboutRefresher = seen.events.flatMap((c) => c.changes).filter((c) => c.userId === "c-ref");
    assert.deepEqual(aboutRefresher, [], "no leave, timeout or join of c-ref");
    assert.equal(calls, 2);
  });
});
