// Cluster mode (PROTOCOL §9): a client given the URLs of several nodes resumes on another
// node when its node shuts down (SIGTERM, a rolling restart), and nobody sees it leave.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { connect } from "../../examples/web/rollcall.js";
import { Broker } from "./support/broker.mjs";
import { eventually, record } from "./support/eventually.mjs";
import { RedisServer } from "./support/redis.mjs";

describe("cluster: resume on another node", () => {
  /** @type {RedisServer} */ let redis;
  /** @type {Broker[]} */ let nodes = [];

  before(async () => {
    redis = await RedisServer.start();
    const cluster = { redis: redis.url, keyPrefix: "js:", heartbeatSeconds: 0.2, nodeTimeoutSeconds: 1 };
    for (let index = 0; index < 2; index++) nodes.push(await Broker.start({ cluster }));
  });
  after(async () => {
    for (const node of nodes) await node.dispose();
    await redis.stop();
  });

  test("SIGTERM on the client's node: it resumes on the next URL, the other user sees no leave", async () => {
    const alice = await connect([nodes[0].url, nodes[1].url], { userId: "alice", backoff: { initialMs: 20, maxMs: 200 } });
    const bob = await connect(nodes[1].url, { userId: "bob" });
    try {
      await alice.join("hall", { state: { mood: "calm" } });
      const hall = await bob.join("hall");
      await eventually(() => hall.members.has("alice"), { message: "bob sees alice" });
      const seen = record(bob, "presence").events;
      const logins = record(alice, "login").events;

      await nodes[0].stop();
      await eventually(() => logins.length === 1, { message: "alice logged in again" });
      assert.equal(logins[0].resumed, true, "resumed on the other node");
      assert.equal(alice.url, nodes[1].url);

      await alice.publish("hall", "still here");
      await eventually(() => hall.members.get("alice")?.mood === "calm", { message: "alice still in bob's roster" });
      const departures = seen.filter(({ event }) => event.type === "leave" || event.type === "timeout");
      assert.deepEqual(departures, [], "no leave or timeout for alice");
    } finally {
      alice.close();
      bob.close();
    }
  });
});
