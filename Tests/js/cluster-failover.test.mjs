// Cluster mode (PROTOCOL §9): a client given the URLs of several nodes resumes on another
// node when its node shuts down (SIGTERM, a rolling restart) or is killed (kill -9: the
// session becomes resumable only once the other nodes declare the node dead, so the client
// keeps retrying the resume meanwhile), and nobody sees it leave or join. Once on one Redis,
// once on a Redis Cluster of 3 masters.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { channelKey, connect } from "./support/rollcall.mjs";
import { Broker } from "./support/broker.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";
import { REDIS_BACKENDS } from "./support/redis.mjs";

for (const backend of REDIS_BACKENDS) describe(`cluster on ${backend.name}: resume on another node`, () => {
  /** @type {{url: string, stop(): Promise<void>}} */ let redis;
  /** @type {Broker[]} */ let nodes = [];

  before(async () => {
    redis = await backend.start();
    // Heartbeats of 1 s: a claim gives up a session whose node has not beaten for 2.5 heartbeats,
    // so the kill -9 test's first resume (a few ms after the kill) comes well before that even on
    // a loaded machine; at 0.2 s it came after it once and resumed at the first try (session 47).
    const cluster = { redis: redis.url, keyPrefix: "js:", heartbeatSeconds: 1, nodeTimeoutSeconds: 3 };
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

  test("kill -9 of the client's node: it retries the resume until the node is declared dead, silently", async () => {
    const victim = await Broker.start({ cluster: nodes[1].config.cluster });
    nodes.push(victim);
    const urls = [victim.url, nodes[1].url];
    const alice = await connect(urls, { userId: "alice", presenceTimeout: 30, backoff: { initialMs: 20, maxMs: 200 } });
    const bob = await connect(nodes[1].url, { userId: "bob" });
    const clients = [alice, bob];
    try {
      await alice.join("porch", { state: { mood: "calm" } });
      const porch = await bob.join("porch");
      await eventually(() => porch.members.has("alice"), { message: "bob sees alice" });
      const seen = record(bob, "presence").events;
      const logins = record(alice, "login").events;
      const attempts = record(alice, "connection").events;

      await victim.kill();
      await eventually(() => logins.length === 1, { message: "alice logged in again" });
      assert.equal(logins[0].resumed, true, "resumed on the other node, not a new session");
      assert.equal(alice.url, nodes[1].url);
      assert.ok(attempts.some((detail) => detail.reason === "not resumed yet"),
        "a login before the node was declared dead did not resume and was retried");
      // The extra sessions were logged out: on the surviving node, alice's and bob's only.
      await eventually(async () => (await nodes[1].metric('rollcall_sessions{state="live"}')) === 2,
        { message: "two live sessions on the surviving node" });

      // Later changes reach alice's roster.
      const carol = await connect(nodes[1].url, { userId: "carol" });
      clients.push(carol);
      await carol.join("porch", { state: { seat: "3" } });
      await bob.setState("porch", { mood: "glad" });
      const roster = alice.rosters.get(channelKey("porch"));
      await eventually(() => roster.members.get("carol")?.seat === "3" && roster.members.get("bob")?.mood === "glad",
        { message: "carol's join and bob's state reach alice" });
      assert.equal(roster.members.get("alice")?.mood, "calm");

      const aboutAlice = seen.filter(({ event }) => event.publisher === "alice"
        || ["join", "leave", "timeout"].some((kind) => event.interval?.[kind]?.includes("alice")));
      assert.deepEqual(aboutAlice, [], "bob saw nothing about alice");

      // No session of alice lingers: her logout is a leave at once, not at the end of a hold.
      await alice.logout();
      await eventually(() => seen.some(({ event }) => event.type === "leave" && event.publisher === "alice"),
        { timeoutMs: 5000, message: "bob sees alice leave" });
    } finally {
      for (const client of clients) client.close();
    }
  });
});

describe("several URLs: the resume is retried for a bounded window only", () => {
  /** @type {Broker[]} */ let brokers = [];

  before(async () => {
    // Two separate brokers (no cluster): the second never holds the first one's sessions.
    for (let index = 0; index < 2; index++) brokers.push(await Broker.start());
  });
  after(async () => {
    for (const broker of brokers) await broker.dispose();
  });

  test("no node can resume: after resumeWindowMs the client keeps a new session and joins again", async () => {
    const windowMs = 800;
    const [first, second] = brokers;
    const ann = await connect([first.url, second.url], { userId: "ann", resumeWindowMs: windowMs, backoff: { initialMs: 20, maxMs: 100 } });
    const ben = await connect(second.url, { userId: "ben" });
    try {
      await ann.join("room", { state: { seat: "1" } });
      const room = await ben.join("room");
      const logins = record(ann, "login").events;
      const attempts = [];
      ann.on("connection", (detail) => attempts.push({ ...detail, at: Date.now() }));

      await first.stop();
      const login = await nextEvent(ann, "login", () => true, 10_000);
      const loggedInAt = Date.now();
      const dropped = attempts.find((detail) => detail.state === "reconnecting");
      assert.equal(login.resumed, false, "a new session on the second broker");
      assert.equal(logins.length, 1, "one login event: the sessions logged out meanwhile are not reported");
      assert.equal(ann.url, second.url);
      assert.ok(attempts.some((detail) => detail.reason === "not resumed yet"), "logins that did not resume were retried");
      assert.ok(loggedInAt - dropped.at >= windowMs - 10, `kept a new session only after the window (${loggedInAt - dropped.at} ms)`);

      await eventually(() => room.members.get("ann")?.seat === "1", { message: "ann joined again with her state" });
      // The sessions that did not resume were logged out: ann's kept one and ben's only.
      await eventually(async () => (await second.metric('rollcall_sessions{state="live"}')) === 2,
        { message: "two live sessions on the second broker" });
    } finally {
      ann.close();
      ben.close();
    }
  });
});
