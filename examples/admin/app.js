// The operator's console: logs in with a server API key (kept in this tab's sessionStorage),
// then shows the broker through its server API and its /metrics page, refreshed every few
// seconds. Plain ES modules, no framework, no build step (docs/operations.md).

import { ApiError, call, forgetKey, storeKey, storedKey } from "./api.js";
import { byId } from "./dom.js";
import { LineChart } from "./chart.js";
import { MetricsHistory, parseMetrics, sampleOf } from "./metrics.js";
import { showNodes } from "./nodes.js";
import { ChannelList } from "./channels.js";
import { RosterView } from "./roster.js";
import { UserView } from "./user.js";

const user = new UserView();
const roster = new RosterView((userId) => { user.select(userId); refreshSoon(); });
const channels = new ChannelList((channel) => { roster.select(channel); refreshSoon(); });
const history = new MetricsHistory(60);
const charts = [
  new LineChart(byId("chart-connections"), {
    title: "WebSocket connections", absent: "not on this node's /metrics",
    series: [{ key: "connections", label: "open", className: "s1" }],
  }),
  new LineChart(byId("chart-sessions"), {
    title: "Sessions", absent: "not on this node's /metrics",
    series: [{ key: "liveSessions", label: "live", className: "s1" }, { key: "heldSessions", label: "held", className: "s2" }],
  }),
  new LineChart(byId("chart-deliveries"), {
    title: "Deliveries per second", absent: "needs two samples",
    series: [{ key: "deliveriesPerSecond", label: "events to sessions", className: "s1" }],
  }),
  new LineChart(byId("chart-webhooks"), {
    title: "Webhook backlog", absent: "webhooks are off on this node",
    series: [{ key: "webhookBacklog", label: "events waiting", className: "s1" }],
  }),
];

let timer = null;
let running = false;
/** A refresh was asked for while one ran: run another as soon as it ends. */
let again = false;

// ---- login --------------------------------------------------------------------------------

function showConsole(on) {
  byId("login-panel").hidden = on;
  byId("console").hidden = !on;
  byId("session").hidden = !on;
}

async function logIn(key) {
  byId("login-error").textContent = "";
  try {
    await call("getInfo", {}, key);
  } catch (error) {
    byId("login-error").textContent = error.status === 401
      ? "The broker refused this key (401 UNAUTHORIZED)."
      : `The broker did not accept the login: ${error.code}: ${error.message}`;
    return;
  }
  storeKey(key);
  byId("login-key").value = "";
  showConsole(true);
  refreshSoon();
}

/** Forgets the key and goes back to the login form, with `message` when the key stopped working. */
function logOut(message = "") {
  forgetKey();
  clearTimeout(timer);
  timer = null;
  again = false;
  showConsole(false);
  byId("login-error").textContent = message;
}

// ---- refreshing ---------------------------------------------------------------------------

function showError(error) {
  const banner = byId("error");
  banner.hidden = !error;
  banner.textContent = error ? `${error.code ?? "ERROR"}: ${error.message}` : "";
}

async function sampleMetrics() {
  const response = await fetch("../metrics", { cache: "no-store", credentials: "omit" });
  if (!response.ok) throw new ApiError(response.status, "METRICS", `/metrics answered HTTP ${response.status}`);
  const restarted = history.add(sampleOf(parseMetrics(await response.text())), Date.now());
  if (restarted) {
    byId("charts-note").textContent =
      "Another process answered /metrics (a restart, or a load balancer spreading requests over nodes): the charts started again. Open the console on one node's own address to follow that node.";
  }
  for (const chart of charts) chart.draw(history.points);
}

/** One refresh of everything shown; the first failure is shown in the banner. */
async function refresh() {
  if (!storedKey()) return;
  if (running) {
    again = true;
    return;
  }
  running = true;
  try {
    const outcomes = await Promise.allSettled([showNodes(), sampleMetrics(), channels.show(), roster.show(), user.show()]);
    const failure = outcomes.find((outcome) => outcome.status === "rejected")?.reason ?? null;
    if (failure instanceof ApiError && failure.status === 401) {
      logOut("The broker no longer accepts this key (401 UNAUTHORIZED).");
      return;
    }
    showError(failure);
    byId("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } finally {
    running = false;
  }
  if (again) {
    again = false;
    refreshSoon();
  } else {
    schedule();
  }
}

function schedule() {
  clearTimeout(timer);
  if (storedKey()) timer = setTimeout(refresh, Number(byId("refresh-every").value) * 1000);
}

/** Refreshes now (after a click), then on the usual schedule. */
function refreshSoon() {
  clearTimeout(timer);
  timer = setTimeout(refresh, 0);
}

// ---- wiring -------------------------------------------------------------------------------

byId("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  logIn(byId("login-key").value);
});
byId("logout-button").addEventListener("click", () => logOut());
byId("refresh-every").addEventListener("change", schedule);
byId("channels-form").addEventListener("submit", (event) => {
  event.preventDefault();
  channels.filter(byId("channels-prefix").value, Number(byId("channels-page-size").value));
  refreshSoon();
});
byId("channels-first").addEventListener("click", () => { channels.pager.reset(); refreshSoon(); });
byId("channels-next").addEventListener("click", () => { if (channels.pager.advance()) refreshSoon(); });
byId("roster-first").addEventListener("click", () => { roster.pager.reset(); refreshSoon(); });
byId("roster-next").addEventListener("click", () => { if (roster.pager.advance()) refreshSoon(); });
byId("roster-close").addEventListener("click", () => roster.select(null));
byId("user-form").addEventListener("submit", (event) => {
  event.preventDefault();
  user.select(byId("user-id").value.trim());
  refreshSoon();
});
byId("disconnect-button").addEventListener("click", async () => {
  try {
    await user.disconnect();
    showError(null);
  } catch (error) {
    showError(error);
  }
  refreshSoon();
});

// A key already in this tab (a reload): straight to the console.
if (storedKey()) {
  showConsole(true);
  refreshSoon();
}
