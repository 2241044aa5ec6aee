// The browser demo: wires rollcall.js to the page. No framework, no build step.
// Every piece of text from the network is set with textContent (never parsed as HTML).

import { RollcallClient, channelKey } from "./rollcall.js";
import { issuerTokens, tokenAsker } from "./token.js";
import { TYPING_KEY, isTyping, typingNotifier, withoutTyping } from "./typing.js";

const $ = (id) => document.getElementById(id);
const ROSTER_PAGE_SIZE = 50;
const BROWSE_PAGE_SIZE = 25;
const MAX_LOG_ENTRIES = 200;

/** @type {import("./rollcall.js").RollcallClient | null} */
let client = null;
/** Key of the channel shown in the middle panel. */
let selected = null;
/** Per-channel view data: activity and message logs, roster page, browse cursor. */
const views = new Map();
/** Sends `typing` (with a TTL) while this user types in the message box; set at login. */
let notifyTyping = null;
/** Rosters whose own-state changes (replies, expired keys) re-render the page. */
const watchedRosters = new WeakSet();
/** The client's `getToken` (auth mode jwt): asks the user for a new token when one is needed. */
let tokens = null;
/** The open question for a new token: `{resolve, reject}` while the token panel waits for one. */
let tokenQuestion = null;

// ---- small helpers -------------------------------------------------------------------

/** Creates an element with attributes and children (strings become text nodes). */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "className") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const time = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "—");

function showError(id, error) {
  $(id).textContent = error ? (error.code ? `${error.code}: ${error.message.replace(/^[A-Z_]+: /, "")}` : String(error.message ?? error)) : "";
}

/** Runs an async UI action, reporting its error in the given element. */
async function attempt(errorId, action) {
  showError(errorId, null);
  try {
    await action();
  } catch (error) {
    showError(errorId, error);
  }
}

function viewFor(key) {
  if (!views.has(key)) views.set(key, { activity: [], messages: [], rosterPage: 0, browseNext: null });
  return views.get(key);
}

function pushLimited(list, item) {
  list.unshift(item);
  if (list.length > MAX_LOG_ENTRIES) list.length = MAX_LOG_ENTRIES;
}

// ---- login ---------------------------------------------------------------------------

$("login-url").value = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host || "127.0.0.1:8080"}/v1`;

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  attempt("login-error", async () => {
    $("login-button").disabled = true;
    try {
      const options = { userId: $("login-user").value.trim(), platform: $("login-platform").value };
      const token = $("login-token").value.trim();
      const issuer = $("login-issuer").value.trim();
      let candidate;
      tokens = null;
      if (token || issuer) {
        // Later tokens (refresh, reconnects) come from the issuer, or else from the user: the
        // page asks for one.
        tokens = issuer ? issuerTokens(issuer, options.userId) : tokenAsker(() => candidate.options.token, askForToken);
        if (token) options.token = token;
        options.getToken = tokens.getToken;
      }
      candidate = new RollcallClient($("login-url").value.trim(), options);
      wireClient(candidate); // shows "connecting…" while it dials
      client = candidate;
      notifyTyping = typingNotifier(candidate);
      // The client retries a failed first connect by itself (protocol 1.2); the login form
      // rather says at once that this URL does not answer.
      let unreachable = null;
      const stopWatching = candidate.on("connection", ({ state, reason }) => {
        if (state !== "reconnecting" || candidate.session) return;
        unreachable = new Error(`Could not connect to ${candidate.url}${reason ? ` (${reason})` : ""}.`);
        candidate.close();
      });
      try {
        await candidate.open();
      } catch (error) {
        if (client === candidate) client = null;
        candidate.close();
        throw unreachable ?? error;
      } finally {
        stopWatching();
      }
    } finally {
      $("login-button").disabled = false;
    }
    $("login-panel").hidden = true;
    $("workspace").hidden = false;
    $("session-info").hidden = false;
    $("session-user").textContent = `${client.userId} · ${client.session.platform}`;
    const limits = client.session.limits ?? {};
    $("state-limits").textContent =
      `Limits: ${limits.maxStateKeys} keys, key ≤ ${limits.maxStateKeyBytes} B, value ≤ ${limits.maxStateValueBytes} B, ` +
      `all together ≤ ${limits.maxStateTotalBytes} B.`;
    $("custom-status-limit").textContent = `(≤ ${limits.customStatusMaxBytes} bytes)`;
    renderConnection({ state: client.state });
    renderTokenExpiry();
    renderAll();
    await client.getUserStatus([client.userId]);
    await client.loadSubscriptions();
    $("join-channel").focus();
  });
});

$("logout-button").addEventListener("click", async () => {
  if (!client) return;
  try {
    await client.logout();
  } catch {
    /* closed anyway */
  }
});

function backToLogin(message) {
  closeTokenQuestion(new Error("logged out"));
  client = null;
  selected = null;
  views.clear();
  $("workspace").hidden = true;
  $("session-info").hidden = true;
  $("login-panel").hidden = false;
  $("login-error").textContent = message ?? "";
}

// ---- client events -------------------------------------------------------------------

function wireClient(c) {
  c.on("connection", (detail) => {
    renderConnection(detail);
    if (detail.state === "reconnecting" && detail.code === 4401 && c === client && tokens?.asksUser) {
      // The token ran out before a new one came: the session ended; the next token logs in anew.
      showTokenPanel(`Your token has expired and the broker ended the session. Paste a new token for ${c.userId} to log in again.`);
    }
    if (detail.state === "closed" && c === client) {
      const reason = { 1000: "", 4401: "Unauthorized (4401).", 4409: "Logged in elsewhere too often: this session was closed (4409)." };
      backToLogin(reason[detail.code] ?? (detail.code ? `Connection closed (${detail.code}).` : ""));
    }
  });
  c.on("login", (result) => {
    const text = result.resumed ? "reconnected — session resumed" : "reconnected — session not resumed, joining again";
    for (const key of c.rosters.keys()) addActivity(key, { kind: "reconnect", text, resumed: result.resumed });
    renderAll();
  });
  c.on("presence", ({ event, roster }) => {
    const key = channelKey(roster.channel, roster.channelType);
    recordPresence(key, event);
    if (key === selected) renderChannel();
    renderChannelList();
  });
  c.on("message", (event) => {
    const key = channelKey(event.channel, event.channelType);
    pushLimited(viewFor(key).messages, { from: event.publisher, message: event.message, time: event.timestamp });
    if (key === selected) renderMessages();
  });
  c.on("userStatus", () => {
    renderStatuses();
    if (selected) renderRoster();
  });
  c.on("subscriptions", () => renderStatuses());
  c.on("session", (event) => {
    if (event.type === "refreshRequired") tokens?.noticeFor(event.expiresAt); // before the client asks getToken
  });
  c.on("token", () => {
    if (c !== client) return;
    renderTokenExpiry();
    if (!tokenQuestion) $("token-panel").hidden = true;
  });
  c.on("error", ({ op, channel, error }) => {
    if (op === "refresh" && c === client) {
      // No new token (the issuer failed, or the broker refused it): the old one stays in force until it expires.
      showTokenPanel(`The token could not be renewed (${error.code ?? error.message}). Paste a new one before ${time(c.expiresAt)}.`);
      return;
    }
    if (channel) addActivity(channelKey(channel), { kind: "info", text: `${op} failed: ${error.code}` });
  });
}

// ---- tokens (auth mode jwt) ----------------------------------------------------------

/** Shows the token panel and resolves with the token the user pastes (rollcall.js's getToken asks). */
function askForToken(reason) {
  closeTokenQuestion(new Error("asked again"));
  return new Promise((resolve, reject) => {
    tokenQuestion = { resolve, reject };
    showTokenPanel(`${reason} Paste a new token for ${client?.userId ?? "this user"} to stay connected.`);
  });
}

function closeTokenQuestion(error) {
  const question = tokenQuestion;
  tokenQuestion = null;
  question?.reject(error);
  $("token-panel").hidden = true;
}

function showTokenPanel(message) {
  $("token-message").textContent = message;
  $("token-error").textContent = "";
  $("token-panel").hidden = false;
  $("token-input").focus();
}

function renderTokenExpiry() {
  const expiresAt = client?.expiresAt ?? null;
  const label = $("token-expiry");
  label.hidden = expiresAt === null;
  label.dataset.expiresAt = expiresAt === null ? "" : String(expiresAt);
  label.textContent = expiresAt === null ? "" : `token until ${time(expiresAt)}`;
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token-input").value.trim();
  if (!token || !client) return;
  $("token-input").value = "";
  const question = tokenQuestion;
  if (question) {
    // rollcall.js asked: it refreshes (or logs in) with this token; a refusal comes back as an error.
    tokenQuestion = null;
    $("token-panel").hidden = true;
    question.resolve(token);
    return;
  }
  attempt("token-error", async () => {
    await client.refresh(token);
    $("token-panel").hidden = true;
  });
});

/** Turns a presence event into activity entries. */
function recordPresence(key, event) {
  const at = event.timestamp;
  switch (event.type) {
    case "snapshot":
      addActivity(key, { kind: "info", text: `snapshot: ${event.snapshot.length} member(s)${event.truncated ? " (first page; loading the rest)" : ""}`, time: at });
      break;
    case "join":
      addActivity(key, { kind: "join", user: event.publisher, text: typeof event.info?.name === "string" ? `joined (${event.info.name})` : "joined", time: at });
      break;
    case "leave":
      addActivity(key, { kind: "leave", user: event.publisher, text: "left", time: at });
      break;
    case "timeout":
      addActivity(key, { kind: "timeout", user: event.publisher, text: "timed out (connection lost)", time: at });
      break;
    case "stateChanged":
      addActivity(key, { kind: "state", user: event.publisher, text: `state → ${formatState(event.state)}`, time: at });
      break;
    case "interval": {
      const lists = event.interval;
      const parts = [];
      if (lists.join.length) parts.push(`${lists.join.length} joined`);
      if (lists.leave.length) parts.push(`${lists.leave.length} left`);
      if (lists.timeout.length) parts.push(`${lists.timeout.length} timed out`);
      if (lists.stateChanged.length) parts.push(`${lists.stateChanged.length} state change(s)`);
      addActivity(key, { kind: "interval", text: `interval: ${parts.join(", ") || "no change"}`, time: at });
      for (const userId of lists.timeout.slice(0, 10)) addActivity(key, { kind: "timeout", user: userId, text: "timed out (connection lost)", time: at });
      for (const userId of lists.leave.slice(0, 10)) addActivity(key, { kind: "leave", user: userId, text: "left", time: at });
      break;
    }
  }
}

function addActivity(key, entry) {
  pushLimited(viewFor(key).activity, { time: Date.now(), ...entry });
  if (key === selected) renderActivity();
}

const formatState = (state) => {
  const entries = Object.entries(state ?? {});
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(", ") : "(empty)";
};

// ---- rendering -----------------------------------------------------------------------

function renderConnection({ state, attempt, delayMs }) {
  const badge = $("connection-state");
  badge.dataset.state = state;
  const labels = { idle: "offline", connecting: "connecting…", online: "online", reconnecting: "reconnecting…", closed: "offline" };
  badge.textContent = labels[state] ?? state;
  if (state === "reconnecting" && delayMs !== undefined) badge.title = `attempt ${attempt}, next try in ${(delayMs / 1000).toFixed(1)} s`;
  else badge.removeAttribute("title");
  document.body.classList.toggle("is-reconnecting", state === "reconnecting");
}

function renderAll() {
  renderChannelList();
  renderChannel();
  renderStatuses();
}

function renderChannelList() {
  const list = $("channel-list");
  list.replaceChildren();
  if (!client) return;
  for (const [key, roster] of client.rosters) {
    const button = el(
      "button",
      {
        type: "button",
        className: "channel-tab",
        "aria-current": key === selected ? "true" : false,
        "data-testid": "channel-tab",
        "data-channel": roster.channel,
        "data-channel-type": roster.channelType,
        onclick: () => select(key),
      },
      el("span", { className: "name" }, roster.channel),
      el("span", { className: "tag" }, roster.channelType),
      el("span", { className: "count", "aria-label": "occupancy" }, String(roster.occupancy)),
    );
    list.append(el("li", {}, button));
  }
}

function select(key) {
  selected = key;
  renderChannelList();
  renderChannel();
}

function selectedRoster() {
  return selected && client ? client.rosters.get(selected) : null;
}

function renderChannel() {
  const roster = selectedRoster();
  $("channel-empty").hidden = !!roster;
  $("channel-body").hidden = !roster;
  if (!roster) return;
  $("channel-name").textContent = roster.channel;
  $("channel-type").textContent = roster.channelType;
  $("channel-mode").textContent = roster.mode ?? "…";
  $("channel-mode").dataset.mode = roster.mode ?? "";
  $("channel-mode").title = roster.mode === "interval" ? "Large channel: changes arrive in periodic batches" : "Changes arrive as they happen";
  $("channel-occupancy").textContent = String(roster.occupancy);
  renderRoster();
  renderActivity();
  renderOwnState();
  renderMessages();
}

function statusDot(userId) {
  const record = client?.statuses.get(userId);
  if (!record) return null;
  return el("span", { className: `dot ${record.status}`, title: record.status, "aria-label": record.status });
}

function chips(state) {
  return Object.entries(state ?? {}).map(([key, value]) =>
    el("span", { className: "chip", "data-testid": "chip", "data-key": key, "data-value": value }, el("b", {}, key), " ", value),
  );
}

/** A member's label: `info.name` (vouched for by the member's token) with the user id, or the user id. */
function memberName(userId, info) {
  const name = typeof info?.name === "string" && info.name.trim() ? info.name : null;
  if (!name) return [el("span", { className: "name" }, userId)];
  return [el("span", { className: "name display-name", "data-testid": "display-name" }, name), el("span", { className: "user-id" }, userId)];
}

function renderRoster() {
  const roster = selectedRoster();
  if (!roster) return;
  const view = viewFor(selected);
  const ids = roster.sortedUserIds();
  const pages = Math.max(1, Math.ceil(ids.length / ROSTER_PAGE_SIZE));
  view.rosterPage = Math.min(view.rosterPage, pages - 1);
  const start = view.rosterPage * ROSTER_PAGE_SIZE;
  const list = $("roster");
  list.replaceChildren(
    ...ids.slice(start, start + ROSTER_PAGE_SIZE).map((userId) =>
      el(
        "li",
        { className: "member", "data-testid": "member", "data-user-id": userId },
        el("span", { className: "who" }, statusDot(userId), ...memberName(userId, roster.info.get(userId)), userId === client.userId ? el("span", { className: "tag you" }, "you") : null),
        el("span", { className: "chips" }, chips(withoutTyping(roster.members.get(userId)))),
        isTyping(roster.members.get(userId)) ? el("span", { className: "typing", "data-testid": "typing" }, "typing…") : null,
      ),
    ),
  );
  if (!ids.length) list.append(el("li", { className: "empty" }, roster.seq === null ? "loading…" : "nobody here"));
  $("roster-pager").hidden = pages <= 1;
  $("roster-page-label").textContent = `${start + 1}–${Math.min(ids.length, start + ROSTER_PAGE_SIZE)} of ${ids.length}`;
  $("roster-prev").disabled = view.rosterPage === 0;
  $("roster-next").disabled = view.rosterPage >= pages - 1;
}

$("roster-prev").addEventListener("click", () => {
  viewFor(selected).rosterPage -= 1;
  renderRoster();
});
$("roster-next").addEventListener("click", () => {
  viewFor(selected).rosterPage += 1;
  renderRoster();
});

async function browse(page) {
  const roster = selectedRoster();
  if (!roster) return;
  const view = viewFor(selected);
  try {
    const result = await client.getOnlineUsers(roster.channel, { channelType: roster.channelType, includeState: true, pageSize: BROWSE_PAGE_SIZE, page });
    view.browseNext = result.nextPage;
    $("browse-list").replaceChildren(
      ...result.users.map((user) => el("li", { className: "member" }, el("span", { className: "who" }, ...memberName(user.userId, user.info)), el("span", { className: "chips" }, chips(user.state)))),
    );
    $("browse-label").textContent = `${result.users.length} of ${result.totalOccupancy}${result.nextPage ? "" : " · last page"}`;
    $("browse-next").disabled = !result.nextPage;
  } catch (error) {
    $("browse-label").textContent = error.code ?? String(error);
  }
}
$("browse-first").addEventListener("click", () => browse(undefined));
$("browse-next").addEventListener("click", () => browse(viewFor(selected).browseNext));
$("browse").addEventListener("toggle", () => {
  if ($("browse").open) browse(undefined);
});

function renderActivity() {
  const list = $("activity");
  const entries = viewFor(selected).activity;
  list.replaceChildren(
    ...entries.map((entry) =>
      el(
        "li",
        {
          className: `entry ${entry.kind}`,
          "data-testid": "activity-entry",
          "data-kind": entry.kind,
          "data-user-id": entry.user,
          "data-resumed": entry.resumed === undefined ? undefined : String(entry.resumed),
        },
        el("time", {}, time(entry.time)),
        el("span", { className: "kind" }, { join: "+", leave: "−", timeout: "⚠", state: "✎", interval: "Σ", reconnect: "↻", info: "•" }[entry.kind] ?? "•"),
        entry.user ? el("b", {}, entry.user) : null,
        " ",
        entry.text,
      ),
    ),
  );
  if (!entries.length) list.append(el("li", { className: "empty" }, "nothing yet"));
}

function renderOwnState() {
  const roster = selectedRoster();
  const list = $("own-state");
  const state = withoutTyping(roster?.members.get(client.userId));
  list.replaceChildren(
    ...Object.entries(state).map(([key, value]) =>
      el(
        "li",
        { "data-testid": "own-state-key", "data-key": key },
        el("span", { className: "chip" }, el("b", {}, key), " ", value),
        el("button", { type: "button", className: "link", "aria-label": `Remove ${key}`, "data-testid": "remove-state", onclick: () => removeKey(key) }, "remove"),
      ),
    ),
  );
  if (!Object.keys(state).length) list.append(el("li", { className: "empty" }, "no keys"));
}

function removeKey(key) {
  const roster = selectedRoster();
  if (!roster) return;
  attempt("state-error", async () => {
    await client.removeState(roster.channel, [key], roster.channelType);
    renderChannel();
  });
}

function renderMessages() {
  const list = $("messages");
  const entries = viewFor(selected).messages;
  list.replaceChildren(
    ...entries.map((entry) =>
      el(
        "li",
        { "data-testid": "message", className: entry.mine ? "mine" : "" },
        el("time", {}, time(entry.time)),
        el("b", {}, entry.from),
        " ",
        typeof entry.message === "string" ? entry.message : JSON.stringify(entry.message),
        entry.recipients === undefined ? null : el("span", { className: "recipients" }, `→ ${entry.recipients} recipient${entry.recipients === 1 ? "" : "s"}`),
      ),
    ),
  );
  if (!entries.length) list.append(el("li", { className: "empty" }, "no messages yet"));
}

function statusItem(record, { own = false } = {}) {
  return el(
    "li",
    { className: "status-item", "data-testid": own ? "own-status-record" : "status", "data-user-id": record.userId, "data-status": record.status },
    el("div", { className: "status-head" },
      el("span", { className: `dot ${record.status}` }),
      el("b", {}, record.userId),
      el("span", { className: `badge ${record.status}`, "data-testid": "status-value" }, record.status),
      own ? null : el("button", { type: "button", className: "link", "data-testid": "unfollow", onclick: () => unfollow(record.userId) }, "unfollow"),
    ),
    record.customStatus ? el("div", { className: "custom", "data-testid": "custom-status" }, `“${record.customStatus}”`) : null,
    el("div", { className: "meta" },
      record.platforms.length ? record.platforms.map((p) => el("span", { className: "tag" }, p)) : el("span", { className: "hint" }, "no devices"),
      el("span", { className: "hint" }, ` since ${time(record.lastOnlineStatusUpdateTime)}`),
    ),
  );
}

function renderStatuses() {
  if (!client) return;
  const own = client.statuses.get(client.userId);
  $("own-status").replaceChildren(own ? el("ul", { className: "statuses" }, statusItem(own, { own: true })) : "");
  const ids = [...client.subscriptions].sort();
  const list = $("statuses");
  list.replaceChildren(...ids.map((id) => statusItem(client.statuses.get(id) ?? { userId: id, status: "loggedOut", platforms: [], customStatus: null })));
  if (!ids.length) list.append(el("li", { className: "empty" }, "Follow someone to see their status here."));
}

function unfollow(userId) {
  attempt("subscribe-error", async () => {
    await client.unsubscribe([userId]);
    renderStatuses();
  });
}

// ---- forms ---------------------------------------------------------------------------

$("join-form").addEventListener("submit", (event) => {
  event.preventDefault();
  attempt("join-error", async () => {
    const roster = await client.join($("join-channel").value.trim(), { channelType: $("join-type").value });
    const key = channelKey(roster.channel, roster.channelType);
    watchOwnState(roster, key);
    viewFor(key);
    select(key);
  });
});

/** Re-renders when this user's own entry changes without a presence event (a typing key expiring). */
function watchOwnState(roster, key) {
  if (watchedRosters.has(roster)) return;
  watchedRosters.add(roster);
  roster.on("change", ({ type }) => {
    if (type === "self" && key === selected) renderRoster();
  });
}

$("leave-button").addEventListener("click", () => {
  const roster = selectedRoster();
  if (!roster) return;
  attempt("join-error", async () => {
    await client.leave(roster.channel, roster.channelType);
    views.delete(selected);
    selected = client.rosters.keys().next().value ?? null;
    renderChannelList();
    renderChannel();
  });
});

$("state-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const roster = selectedRoster();
  if (!roster) return;
  attempt("state-error", async () => {
    await client.setState(roster.channel, { [$("state-key").value]: $("state-value").value }, roster.channelType);
    $("state-key").value = "";
    $("state-value").value = "";
    renderChannel();
    $("state-key").focus();
  });
});

$("publish-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const roster = selectedRoster();
  if (!roster) return;
  attempt("publish-error", async () => {
    const text = $("publish-text").value;
    let message = text;
    if (/^[[{"]/.test(text.trim())) {
      try {
        message = JSON.parse(text);
      } catch {
        message = text;
      }
    }
    const key = selected;
    const { recipients } = await client.publish(roster.channel, message, roster.channelType);
    notifyTyping?.reset(roster.channel, roster.channelType);
    if (isTyping(roster.members.get(client.userId))) client.removeState(roster.channel, [TYPING_KEY], roster.channelType).catch(() => {});
    pushLimited(viewFor(key).messages, { from: client.userId, recipients, message, time: Date.now(), mine: true });
    $("publish-text").value = "";
    if (key === selected) renderMessages();
  });
});

// Typing: at most one setState({typing: "1"}, {ttlSeconds: 3}) a second while keys are pressed.
$("publish-text").addEventListener("input", () => {
  const roster = selectedRoster();
  if (roster && notifyTyping && $("publish-text").value) notifyTyping(roster.channel, roster.channelType);
});

$("custom-status-form").addEventListener("submit", (event) => {
  event.preventDefault();
  attempt("custom-status-error", async () => {
    await client.setCustomStatus($("custom-status").value);
    renderStatuses();
  });
});

$("custom-status-clear").addEventListener("click", () => {
  attempt("custom-status-error", async () => {
    await client.setCustomStatus(null);
    $("custom-status").value = "";
    renderStatuses();
  });
});

$("subscribe-form").addEventListener("submit", (event) => {
  event.preventDefault();
  attempt("subscribe-error", async () => {
    const ids = $("subscribe-user").value.split(",").map((s) => s.trim()).filter(Boolean);
    const { failed } = await client.subscribe(ids);
    $("subscribe-user").value = "";
    renderStatuses();
    if (failed.length) showError("subscribe-error", { message: failed.map((f) => `${f.userId}: ${f.code}`).join("; ") });
  });
});
