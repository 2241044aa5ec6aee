// examples/react/usePresence.js under real React 18 (react-test-renderer), against the real
// broker. Needs Debian's node-react and node-react-test-renderer; skipped without them (no
// npm packages here).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Broker, startBrokerAroundSuite } from "./support/broker.mjs";
import { ClientPool } from "./support/clients.mjs";
import { loadDebianReact } from "./support/debian-react.mjs";
import { eventually } from "./support/eventually.mjs";

const react = await loadDebianReact();

describe("usePresence under React", { skip: react ? false : "React is not installed (Debian: node-react node-react-test-renderer)" }, () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  startBrokerAroundSuite(pool, (started) => (broker = started));

  test("renders the roster, re-renders on joins and typing, leaves on unmount", async () => {
    const { React, TestRenderer } = react;
    const { usePresence } = await import("../../examples/react/usePresence.js");
    const alice = await pool.open(broker.url, "alice");
    const bob = await pool.open(broker.url, "bob");
    const renders = [];
    let api;
    function Room({ client }) {
      api = usePresence(client, "room:react", { state: { mood: "ok" }, typingTtlSeconds: 0.5, leaveDelayMs: 0 });
      renders.push(api);
      const h = React.createElement;
      return h("ul", null, api.members.map((m) => h("li", { key: m.userId }, m.userId, m.typing ? " typing…" : "")));
    }
    let root;
    await TestRenderer.act(async () => {
      root = TestRenderer.create(React.createElement(Room, { client: alice }));
    });
    const text = () => root.root.findAllByType("li").map((li) => li.children.join(""));
    const settle = (condition, message) =>
      eventually(async () => {
        await TestRenderer.act(async () => {});
        return condition();
      }, { message });

    await settle(() => text().join() === "alice", "alice's roster rendered");
    assert.equal(api.status, "joined");
    assert.equal(api.mode, "announce");

    await bob.join("room:react");
    await settle(() => text().join() === "alice,bob" && api.occupancy === 2, "bob's join rendered");

    await bob.setState("room:react", { typing: "1" }, "message", { ttlSeconds: 0.5 });
    await settle(() => text().join() === "alice,bob typing…" && api.typing.join() === "bob", "bob typing rendered");
    await settle(() => text().join() === "alice,bob" && api.typing.length === 0, "bob's typing expired");

    await TestRenderer.act(async () => {
      await api.setTyping();
    });
    await eventually(() => bob.rosters.get("message\u0000room:react").members.get("alice")?.typing === "1", { message: "bob sees alice typing" });
    await settle(() => api.members.find((m) => m.self)?.typing === true, "own typing shown in members");
    assert.deepEqual(api.typing, [], "own typing is not in typing");
    await settle(() => api.members.every((m) => !m.typing), "own typing expired");

    await TestRenderer.act(async () => root.unmount());
    await eventually(() => !bob.rosters.get("message\u0000room:react").members.has("alice"), { message: "alice left on unmount" });
    assert.ok(renders.length >= 5);
  });
});
