// WebSocket compression with Node's own WebSocket (undici, Node 20 `--experimental-websocket`):
// undici always offers `permessage-deflate; client_max_window_bits`, so with the broker's
// `http.permessageDeflate` on every connection of rollcall.js is compressed, with nothing to
// configure in the client; with it off (the default) the same client runs uncompressed.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Broker, startBrokerAroundSuite } from "./support/broker.mjs";
import { ClientPool, membersOf } from "./support/clients.mjs";
import { eventually, nextEvent } from "./support/eventually.mjs";

/** The extensions the broker accepted for a plain WebSocket to `url` (then closed). */
async function negotiatedExtensions(url) {
  const socket = new WebSocket(url, "rollcall.v1");
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error("WebSocket failed"));
  });
  const extensions = socket.extensions;
  socket.close(1000);
  return extensions;
}

/** A member's state: ~1 KB of compressible text. */
const stateOf = (index) => ({ note: `member ${index} is here; `.repeat(40), index: String(index) });

describe("permessage-deflate on", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  startBrokerAroundSuite(pool, (started) => (broker = started), { http: { permessageDeflate: true } });

  test("Node's WebSocket offers it and the broker accepts it", async () => {
    assert.match(await negotiatedExtensions(broker.url), /^permessage-deflate/);
  });

  test("rollcall.js over compressed frames: a 30-member roster with 1 KB states and a 20 KB message arrive intact", async () => {
    const members = [];
    for (let index = 0; index < 30; index++) {
      const client = await pool.open(broker.url, `m${index}`);
      await client.join("big", { state: stateOf(index) });
      members.push(client);
    }
    const watcher = await pool.open(broker.url, "watcher");
    const room = await watcher.join("big");
    await eventually(() => room.members.size === 31, { message: "the watcher's roster has everyone" });
    const expected = Object.fromEntries(members.map((_, index) => [`m${index}`, stateOf(index)]));
    const roster = membersOf(room);
    delete roster.watcher;
    assert.deepEqual(roster, expected);

    const text = Array.from({ length: 700 }, (_, n) => `line ${n} of the big message`).join("|");
    const received = nextEvent(watcher, "message");
    await members[0].publish("big", { text });
    assert.equal((await received).message.text, text);
  });
});

describe("permessage-deflate off (default)", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  startBrokerAroundSuite(pool, (started) => (broker = started));

  test("the offer is declined and rollcall.js works uncompressed", async () => {
    assert.equal(await negotiatedExtensions(broker.url), "");
    const alice = await pool.open(broker.url, "alice");
    const bob = await pool.open(broker.url, "bob");
    await alice.join("room");
    await bob.join("room");
    const received = nextEvent(bob, "message");
    await alice.publish("room", { text: "x".repeat(10_000) });
    assert.equal((await received).message.text.length, 10_000);
  });
});
