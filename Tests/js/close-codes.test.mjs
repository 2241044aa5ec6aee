// How the client ends or retries after the broker closes: 4409 (session limit) and a logout
// are final; a first connection that cannot be made is retried with the backoff (protocol 1.2
// intent; with `reconnect: false` it rejects `open()`).

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";

import { CloseCode, RollcallClient, RollcallError } from "./support/rollcall.mjs";
import { Broker } from "./support/broker.mjs";
import { ClientPool, FAST_BACKOFF } from "./support/clients.mjs";
import { eventually, nextEvent, record } from "./support/eventually.mjs";

describe("close codes", () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();

  before(async () => {
    broker = await Broker.start({ limits: { maxSessionsPerUser: 1 } });
  });
  after(async () => {
    pool.closeAll();
    await broker.dispose();
  });

  test("4409: the oldest session is closed for good (no reconnect that would close the new one)", async () => {
    const first = await pool.open(broker.url, "max");
    const states = record(first, "connection");
    const closed = nextEvent(first, "connection", (c) => c.state === "closed");
    const second = await pool.open(broker.url, "max");
    const detail = await closed;
    assert.equal(detail.code, CloseCode.SESSION_LIMIT);
    assert.equal(first.state, "closed");
    assert.deepEqual(states.events.map((e) => e.state), ["closed"], "no reconnecting");
    assert.equal(second.state, "online");
    await second.ping();
  });

  test("a first connection that fails is retried with the backoff; open() resolves once a broker listens (protocol 1.2 intent)", async () => {
    const port = await freePort();
    const client = new RollcallClient(`ws://127.0.0.1:${port}/v1`, { userId: "late", backoff: FAST_BACKOFF });
    pool.clients.push(client);
    const states = record(client, "connection");
    const opened = client.open();
    await eventually(() => states.events.filter((e) => e.state === "reconnecting").length >= 3, { message: "three retries" });
    const late = await Broker.start({}, { port });
    try {
      const login = await opened;
      assert.equal(login.userId, "late");
      assert.equal(client.state, "online");
      const retries = states.events.filter((e) => e.state === "reconnecting" && e.delayMs !== undefined);
      retries.forEach((retry, n) => assert.equal(retry.attempt, n + 1));
      assert.ok(retries.every((retry) => retry.delayMs <= FAST_BACKOFF.maxMs), "backoff delays");
    } finally {
      client.close();
      await late.dispose();
    }
  });

  test("with reconnect: false, a first connection that fails rejects open() with DISCONNECTED and stays closed", async () => {
    const port = await freePort();
    const client = new RollcallClient(`ws://127.0.0.1:${port}/v1`, { userId: "nobody", backoff: FAST_BACKOFF, reconnect: false });
    pool.clients.push(client);
    const states = record(client, "connection");
    await assert.rejects(client.open(), (error) => error instanceof RollcallError && error.code === "DISCONNECTED");
    assert.equal(client.state, "closed");
    assert.deepEqual(states.events.map((e) => e.state), ["connecting", "closed"]);
  });
});

/** A port nothing listens on (it was free a moment ago). */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
