// The broker's totals and its nodes, from `getInfo` (in a cluster: every node).

import { byId, el } from "./dom.js";
import { call } from "./api.js";

/** Reads `getInfo` and shows it. */
export async function showNodes() {
  const info = await call("getInfo");
  byId("info-version").textContent = info.version;
  byId("info-nodes").textContent = String(info.nodes.length);
  byId("info-sessions").textContent = String(info.sessions);
  byId("info-channels").textContent = String(info.channels);
  byId("nodes").replaceChildren(...info.nodes.map((node) =>
    el("tr", { "data-testid": "node", "data-node-id": node.nodeId, "data-sessions": node.sessions },
      el("td", {}, el("code", {}, node.nodeId)),
      el("td", { className: "number" }, String(node.sessions)))));
  return info;
}
