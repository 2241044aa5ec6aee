// A connection cut without a close frame (through a TCP proxy that resets both sides): the
// client says `reconnecting`, resumes the held session with its resumeToken, the other user
// sees no leave, and `message` events published meanwhile are replayed (PROTOCOL 1.1 §5).

import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";

import { Broker } from "./support/broker.mjs";
import { ClientPool, membersOf } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";
import { CuttableProxy } from "./support/proxy.mjs";

const HELD = 'rollcall_sessions{state="held"}';

/** Cuts `proxy` and keeps it refusing until the broker holds one more session than before. */
async function cutAndWaitHeld(broker, proxy, client) {
  const before = await broker.metric(HELD);
  const reconnecting = nextEvent(client, "connection", (c) => c.state === "reconnecting");
  proxy.refusing = true;
  proxy.cut();
  await reconnecting;
  await eventually(async () => (await broker.metric(HELD)) === before + 1, { message: `${before + 1} held session(s)` });
}

describe("resume after a cut connection", () => {
  /** @type {Broker} */ let broker;
  /** @type {CuttableProxy} */ let proxy;
  const pool = new ClientPool();

  before(async () => {
    broker = await Broker.start();
  });
  afterEach(async () => {
    pool.closeAll();
    await proxy?.close();
  });
  after(async () => {
    await broker.dispose();
  });

  test("the client resumes: same session, roster kept, the other user sees no leave", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const carol = await pool.open(proxy.url, "carol");
    const dave = await pool.open(broker.url, "dave");
    const carolRoom = await carol.join("room:r", { state: { mood: "ok" } });
    const daveRoom = await dave.join("room:r");
    await eventually(() => carolRoom.members.has("dave") && daveRoom.members.has("carol"));
    const daveSees = record(daveRoom, "change");
    const firstLogin = carol.session;

    await cutAndWaitHeld(broker, proxy, carol);
    assert.equal(carol.state, "reconnecting");
    const resumed = nextEvent(carol, "login");
    const snapshot = nextEvent(carolRoom, "change", (c) => c.type === "snapshot");
    proxy.refusing = false;
    const login = await resumed;
    assert.equal(login.resumed, true);
    assert.equal(login.sessionId, firstLogin.sessionId);
    assert.notEqual(login.resumeToken, firstLogin.resumeToken);
    assert.deepEqual(login.channels, [{ channel: "room:r", channelType: "message" }]);
    assert.equal(login.messagesDropped, 0);
    await snapshot;
    assert.equal(carol.state, "online");
    assert.deepEqual(membersOf(carolRoom), { carol: { mood: "ok" }, dave: {} });

    await carol.setState("room:r", { back: "yes" });
    await eventually(() => daveRoom.members.get("carol")?.back === "yes", { message: "dave sees carol's new state" });
    assert.deepEqual(
      daveSees.events.flatMap((c) => c.changes).map((c) => `${c.kind} ${c.userId}`),
      ["state carol"],
      "dave saw only the state change: no leave, timeout or join",
    );
  });

  test("messages published while the session is held are replayed in order after the snapshot", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const erin = await pool.open(proxy.url, "erin");
    const fred = await pool.open(broker.url, "fred");
    await erin.join("room:held");
    await fred.join("room:held");
    await cutAndWaitHeld(broker, proxy, erin);

    for (const n of [1, 2, 3]) {
      const { recipients } = await fred.publish("room:held", { n });
      assert.equal(recipients, 0, "a held session is not counted");
    }
    const raw = record(erin, "event");
    const messages = record(erin, "message");
    const login = nextEvent(erin, "login");
    proxy.refusing = false;
    assert.equal((await login).resumed, true);
    assert.equal((await login).messagesDropped, 0);
    await eventually(() => messages.events.length === 3, { message: "three replayed messages" });
    assert.deepEqual(messages.events.map((m) => m.message.n), [1, 2, 3]);
    assert.ok(messages.events.every((m) => m.publisher === "fred" && m.channel === "room:held"));
    const kinds = raw.events.map((e) => (e.event === "presence" ? e.type : e.event));
    assert.deepEqual(kinds.slice(0, 4), ["snapshot", "message", "message", "message"]);
  });
});

describe("held messages over limits.heldMessageBytes", () => {
  /** @type {Broker} */ let broker;
  /** @type {CuttableProxy} */ let proxy;
  const pool = new ClientPool();

  before(async () => {
    broker = await Broker.start({ limits: { heldMessageBytes: 600 } });
  });
  after(async () => {
    pool.closeAll();
    await proxy?.close();
    await broker.dispose();
  });

  test("the oldest kept messages are replayed; messagesDropped counts the rest", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const gina = await pool.open(proxy.url, "gina");
    const hank = await pool.open(broker.url, "hank");
    await gina.join("room:full");
    await hank.join("room:full");
    await cutAndWaitHeld(broker, proxy, gina);
    const total = 10;
    for (let n = 0; n < total; n++) await hank.publish("room:full", { n, pad: "x".repeat(100) });

    const messages = record(gina, "message");
    const login = nextEvent(gina, "login");
    proxy.refusing = false;
    const result = await login;
    assert.equal(result.resumed, true);
    assert.ok(result.messagesDropped > 0, "some did not fit in 600 bytes");
    const kept = total - result.messagesDropped;
    assert.ok(kept > 0, "some fit");
    await eventually(() => messages.events.length === kept, { message: `${kept} replayed messages` });
    assert.deepEqual(messages.events.map((m) => m.message.n), [...Array(kept).keys()], "the oldest ones, in order");
  });
});

describe("replies lost in a cut connection", () => {
  /** @type {Broker} */ let broker;
  /** @type {CuttableProxy} */ let proxy;
  const pool = new ClientPool();

  before(async () => {
    broker = await Broker.start();
  });
  after(async () => {
    pool.closeAll();
    await proxy?.close();
    await broker.dispose();
  });

  test("a join and a leave whose replies were lost: after the resume the app's last calls stand (intent, protocol 1.2)", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const ida = await pool.open(proxy.url, "ida");
    const jon = await pool.open(broker.url, "jon");
    const jonLost = await jon.join("room:lost-join");
    const jonKept = await jon.join("room:lost-leave");
    await ida.join("room:lost-leave");
    await eventually(() => jonKept.members.has("ida") && jonLost.seq !== null);

    // The broker carries out a join and a leave, but ida never reads the replies.
    proxy.muted = true;
    const join = ida.join("room:lost-join");
    const leave = ida.leave("room:lost-leave");
    await eventually(() => jonLost.members.has("ida") && !jonKept.members.has("ida"), { message: "the broker did both" });
    assert.deepEqual([...ida.rosters.keys()], ["message\u0000room:lost-join"], "the leave took effect at once");
    assert.equal(ida.rosters.get("message\u0000room:lost-join").status, "joining");
    const resumed = nextEvent(ida, "login");
    proxy.cut();
    proxy.muted = false;
    await leave; // the link dropped: the resume makes it stand
    assert.equal((await resumed).resumed, true);
    assert.deepEqual((await resumed).channels, [{ channel: "room:lost-join", channelType: "message" }]);
    const roster = await join; // sent again after the resume, and accepted
    assert.equal(roster.status, "joined");

    // What ida's app asked for last stands: in lost-join, out of lost-leave.
    await eventually(() => jonLost.members.has("ida") && !jonKept.members.has("ida"));
    assert.deepEqual((await jon.getUserChannels("ida")).channels, [{ channel: "room:lost-join", channelType: "message" }]);
    assert.deepEqual([...ida.rosters.keys()], ["message\u0000room:lost-join"]);
    await eventually(() => roster.members.has("jon") && roster.members.has("ida"));
  });
});

describe("a hold that expired", () => {
  /** @type {Broker} */ let broker;
  /** @type {CuttableProxy} */ let proxy;
  const pool = new ClientPool();

  before(async () => {
    broker = await Broker.start({ presence: { timeoutSeconds: 0.5 } });
  });
  after(async () => {
    pool.closeAll();
    await proxy?.close();
    await broker.dispose();
  });

  test("others see timeout; the client comes back unresumed and joins again with its state", async () => {
    proxy = await CuttableProxy.start(broker.port);
    const kai = await pool.open(proxy.url, "kai");
    const lea = await pool.open(broker.url, "lea");
    const kaiRoom = await kai.join("room:expire", { state: { seat: "7" } });
    const leaRoom = await lea.join("room:expire");
    await eventually(() => leaRoom.members.has("kai") && kaiRoom.members.has("lea"));

    const timedOut = nextEvent(leaRoom, "change", (c) => c.type === "timeout");
    proxy.refusing = true;
    proxy.cut();
    assert.deepEqual((await timedOut).changes, [{ kind: "timeout", userId: "kai" }]);
    assert.equal(leaRoom.members.has("kai"), false);

    const login = nextEvent(kai, "login");
    const rejoined = nextEvent(leaRoom, "change", (c) => c.type === "join");
    proxy.refusing = false;
    assert.equal((await login).resumed, false);
    assert.deepEqual((await rejoined).changes, [{ kind: "join", userId: "kai", state: { seat: "7" } }]);
    await eventually(() => kaiRoom.seq !== null && kaiRoom.members.has("lea") && kaiRoom.members.get("kai")?.seat === "7");
  });
});
