// @rollcall/react (installed from its tarball) under real React 18 (react-test-renderer),
// against the real broker: RollcallProvider under StrictMode (its double mount closes the first
// client: one live session), usePresence(channel) with its states, useConnectionState(),
// useUserStatus(ids). Needs Debian's node-react and node-react-test-renderer; skipped without
// them (no npm registry here).

import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, test } from "node:test";

import { Broker, startBrokerAroundSuite } from "./support/broker.mjs";
import { ClientPool } from "./support/clients.mjs";
import { loadDebianReact } from "./support/debian-react.mjs";
import { eventually } from "./support/eventually.mjs";
import { installedPackages } from "./support/package.mjs";

const react = await loadDebianReact();
const LIVE = 'rollcall_sessions{state="live"}';

describe("@rollcall/react under React", { skip: react ? false : "React is not installed (Debian: node-react node-react-test-renderer)" }, () => {
  /** @type {Broker} */ let broker;
  const pool = new ClientPool();
  startBrokerAroundSuite(pool, (started) => (broker = started));

  test("Provider under StrictMode: one client; usePresence, useConnectionState and useUserStatus render the broker's state", async () => {
    const { React, TestRenderer } = react;
    const { RollcallProvider, usePresence, useConnectionState, useUserStatus } = await import(
      pathToFileURL(join(installedPackages().project, "react-entry.mjs")).href
    );
    const bob = await pool.open(broker.url, "bob");
    const h = React.createElement;
    const statuses = [];
    let api, connection, followed;
    function Room() {
      api = usePresence("room:react", { state: { mood: "ok" }, typingTtlSeconds: 0.5 });
      connection = useConnectionState();
      followed = useUserStatus(["bob"]);
      if (statuses.at(-1) !== api.status) statuses.push(api.status);
      return h("ul", null, api.members.map((m) => h("li", { key: m.userId }, m.userId, m.typing ? " typing…" : "")));
    }
    const options = { userId: "alice", platform: "other", backoff: { initialMs: 40, maxMs: 400 } };
    let root;
    await TestRenderer.act(async () => {
      root = TestRenderer.create(h(React.StrictMode, null, h(RollcallProvider, { url: broker.url, options }, h(Room))));
    });
    const text = () => root.root.findAllByType("li").map((li) => li.children.join(""));
    const settle = (condition, message) =>
      eventually(async () => {
        await TestRenderer.act(async () => {});
        return condition();
      }, { message });

    await settle(() => connection === "online", "online");
    await settle(() => text().join() === "alice" && api.status === "joined", "alice's roster rendered");
    assert.deepEqual(statuses.filter((s) => s !== "idle"), ["joining", "joined"], "idle → joining → joined");
    await eventually(async () => (await broker.metric(LIVE)) === 2, { message: "StrictMode's first client was closed: alice and bob live" });

    await bob.join("room:react");
    await settle(() => text().join() === "alice,bob" && api.occupancy === 2, "bob's join rendered");
    await settle(() => followed.bob?.status === "online", "bob's status record");
    await TestRenderer.act(async () => {
      await bob.setCustomStatus("busy");
    });
    await settle(() => followed.bob?.customStatus === "busy", "bob's custom status rendered");

    await TestRenderer.act(async () => root.unmount());
    await eventually(async () => (await broker.metric(LIVE)) === 1, { message: "the provider closed its client on unmount" });
    assert.equal(connection, "online", "last rendered state");
  });
});
