// rollcall.js — `@rollcall/client`, a small, dependency-free client for the Rollcall wire
// protocol v1.2.
//
// Install the package (`npm pack` in clients/js, or `npm install ./rollcall-client-x.y.z.tgz`),
// or copy this one file into any page or app that has a WebSocket (browsers, Deno, Node ≥ 22,
// Node 20 with `--experimental-websocket`). Types: `rollcall.d.ts` next to this file.
//
//   import { connect } from "@rollcall/client"; // or "./rollcall.js"
//   const client = await connect("ws://127.0.0.1:8080/v1", { userId: "alice", platform: "web" });
//   const roster = await client.join("room:lobby", { state: { mood: "happy" } });
//   roster.on("change", () => console.log([...roster.members.keys()]));
//   client.on("message", (ev) => console.log(ev.publisher, ev.message));
//   client.on("connection", ({ state }) => console.log(state)); // connecting / online / reconnecting / closed
//
// What it does for you:
// - request/reply by id, as promises (errors reject with a `RollcallError` carrying the code);
//   every request has a timeout (`requestTimeoutMs`, default 10 s; then code `TIMEOUT`);
// - liveness (protocol 1.2): after `limits.heartbeatIntervalSeconds` with nothing received it
//   sends `ping`; after `limits.heartbeatTimeoutSeconds` with nothing received it treats the
//   link as lost (a sleeping laptop, a dead NAT), closes it and reconnects with `resumeToken`;
// - splits the broker's newline-batched frames and dispatches events in order;
// - keeps an exact `Roster` per joined channel: snapshot, then join → leave/timeout →
//   stateChanged, and interval lists, ignoring events older than what it shows (`seq`);
//   a truncated snapshot is completed with `getOnlineUsers` pages; keys this client set
//   with `ttlSeconds` leave its own roster entry by themselves (the broker does not echo
//   events about this user in announce mode);
// - caches user-status records (`userStatus` events, replies) and this user's subscriptions;
// - keeps intent (protocol 1.2): `join`, `leave`, `subscribe` and `unsubscribe` made while
//   offline are applied on reconnect, the last call winning; a rejoin that fails is retried
//   (honouring `retryAfterMs`) and shown as the roster's `status`, never dropped silently;
//   a `seq` gap makes a roster resync (a listing, then the events after its `seq`);
// - reconnects with exponential backoff (the first connect too), resuming the held session
//   with `resumeToken`; when the session could not be resumed it joins its channels again; with several URLs (a
//   cluster) it keeps retrying the resume for a while first, since a node killed abruptly
//   keeps its sessions live (not resumable) until the other nodes declare it dead;
// - with a `getToken()` callback (auth mode `jwt`, protocol 1.1): a fresh token for every
//   login, `refresh` on the broker's `refreshRequired` notice, and one more token when a
//   reconnect is refused with `UNAUTHORIZED` or the broker closes with 4401 (token expired).

/** How long a key this client saw expire stays out of its own state in replies (ms). */
const TTL_GRACE_MS = 1000;

/** Default timeout of a request, in milliseconds (`requestTimeoutMs`). */
const DEFAULT_REQUEST_TIMEOUT_MS = 10000;

/**
 * Liveness when the login result does not announce it (a broker older than protocol 1.2): the
 * broker's own defaults, `heartbeat.intervalSeconds` and `heartbeat.timeoutSeconds`.
 */
const DEFAULT_HEARTBEAT = { heartbeatIntervalSeconds: 10, heartbeatTimeoutSeconds: 30 };

/**
 * After a link is found dead by liveness, the broker may not have noticed yet (it waits for its
 * own heartbeat timeout, checked every interval): a login that does not resume is retried for
 * two intervals and this much more.
 */
const LIVENESS_RESUME_MARGIN_MS = 2000;

/**
 * Error codes after which a join, a status subscription or a resync is tried again (after
 * `retryAfterMs` when the broker gives one, else the backoff): the broker may accept it later.
 * A first login that fails with one of them is retried too.
 */
const RETRYABLE_CODES = new Set(["RATE_LIMITED", "UNAVAILABLE", "TIMEOUT", "INTERNAL"]);

/** Default reconnect backoff, in milliseconds. */
const DEFAULT_BACKOFF = { initialMs: 500, maxMs: 15000, factor: 2 };

/**
 * Close codes after which reconnecting would be wrong (the session ended on purpose):
 * 1000 logout, 4401 unauthorized or token expired (unless a `getToken` option can supply a
 * new token), 4403 disconnected by the server API, 4409 session limit.
 */
const FINAL_CLOSE_CODES = new Set([1000, 4401, 4403, 4409]);

/**
 * Close codes after which the session is known to have ended, so a resume cannot succeed and
 * is not retried: 4401 (token expired: ended as with a close frame), 1012 (the cluster lost
 * its data: resume tokens no longer resume).
 */
const SESSION_ENDED_CLOSE_CODES = new Set([4401, 1012]);

/**
 * Default `resumeWindowMs` with several URLs: a node killed abruptly (kill -9) keeps its
 * sessions live until it has missed 2.5 heartbeats (PROTOCOL §9; 2.5–3.5 s with the default
 * `cluster.heartbeatSeconds`), and a resume before that answers `resumed: false`.
 */
const DEFAULT_CLUSTER_RESUME_WINDOW_MS = 5000;

/**
 * Close codes of the protocol (PROTOCOL §7), by name.
 * @type {Readonly<Record<string, number>>}
 */
export const CloseCode = Object.freeze({
  LOGOUT: 1000,
  SHUTDOWN: 1001,
  BINARY_FRAME: 1003,
  BAD_UTF8: 1007,
  FRAME_TOO_BIG: 1009,
  SERVICE_RESTART: 1012,
  SLOW_CONSUMER: 1013,
  UNAUTHORIZED: 4401,
  DISCONNECTED_BY_SERVER: 4403,
  LOGIN_TIMEOUT: 4408,
  SESSION_LIMIT: 4409,
});

/**
 * Every error code of the protocol (PROTOCOL §7), plus this client's own `DISCONNECTED` and
 * `TIMEOUT` (no reply within the request's timeout, protocol 1.2 §3).
 * @type {readonly string[]}
 */
export const ERROR_CODES = Object.freeze([
  "INVALID_JSON", "INVALID_REQUEST", "UNKNOWN_OP", "INVALID_ARGUMENT", "NOT_LOGGED_IN",
  "ALREADY_LOGGED_IN", "UNAUTHORIZED", "FORBIDDEN", "NOT_IN_CHANNEL", "USER_NOT_PRESENT",
  "TOO_MANY_KEYS", "KEY_TOO_LONG", "VALUE_TOO_LONG", "STATE_TOO_LARGE", "TOO_MANY_PENDING_STATES",
  "TOO_MANY_CHANNELS", "TOO_MANY_USERS", "MESSAGE_TOO_LARGE", "CUSTOM_STATUS_TOO_LONG",
  "CANNOT_SUBSCRIBE_SELF", "TARGET_SUBSCRIBER_LIMIT", "RATE_LIMITED", "INTERNAL", "UNAVAILABLE",
  "DISCONNECTED", "TIMEOUT",
]);

/**
 * An error reply from the broker, or a local failure: `DISCONNECTED` (no connection, or it
 * closed before the reply), `TIMEOUT` (no reply within the request's timeout).
 */
export class RollcallError extends Error {
  /**
   * @param {string} code stable error code, e.g. `TOO_MANY_KEYS` (see the protocol's §7)
   * @param {string} message human-readable text
   * @param {object} [details] the whole error object of the reply (e.g. with `retryAfterMs`)
   */
  constructor(code, message, details = {}) {
    super(`${code}: ${message}`);
    this.name = "RollcallError";
    /** @type {string} */
    this.code = code;
    /** @type {number | undefined} milliseconds to wait, for `RATE_LIMITED` and `UNAVAILABLE` */
    this.retryAfterMs = details.retryAfterMs;
    /** @type {object} the error object as the broker sent it */
    this.details = details;
  }
}

/** A tiny synchronous event emitter: `on(type, fn)` returns a function that unsubscribes. */
class Emitter {
  #handlers = new Map();

  /**
   * Calls `handler(detail)` for every event of `type`.
   * @param {string} type
   * @param {(detail: any) => void} handler
   * @returns {() => void} call it to stop listening
   */
  on(type, handler) {
    if (!this.#handlers.has(type)) this.#handlers.set(type, new Set());
    this.#handlers.get(type).add(handler);
    return () => this.#handlers.get(type)?.delete(handler);
  }

  /** @protected */
  emit(type, detail) {
    for (const handler of [...(this.#handlers.get(type) ?? [])]) {
      try {
        handler(detail);
      } catch (error) {
        console.error(`rollcall: a "${type}" handler threw`, error);
      }
    }
  }
}

/** The key a channel is known by: `channelType` and name (a `message` and a `stream` channel may share a name). */
export function channelKey(channel, channelType = "message") {
  return `${channelType}\u0000${channel}`;
}

/**
 * The members of one channel and their states, kept exactly from the broker's presence events.
 *
 * `members` maps userId → state object. It includes this user (from the snapshot, and from
 * this session's own `setState`/`removeState` replies, which the broker does not echo as events).
 * `info` maps userId → the token's `info` object (protocol 1.1) for members that have one.
 *
 * Events: `change` with `{ type, changes, event }` where `changes` is a list of
 * `{ kind: "join" | "leave" | "timeout" | "state", userId, state? }` and `type` is the
 * presence event type (`snapshot`, `join`, `leave`, `timeout`, `stateChanged`, `interval`,
 * `page`, `self`).
 */
export class Roster extends Emitter {
  /**
   * @param {string} channel
   * @param {string} channelType `message` or `stream`
   * @param {string} selfUserId this client's user id
   */
  constructor(channel, channelType, selfUserId) {
    super();
    /** @type {string} */ this.channel = channel;
    /** @type {string} */ this.channelType = channelType;
    /** @type {string} */ this.selfUserId = selfUserId;
    /** @type {Map<string, Record<string, string>>} userId → state */
    this.members = new Map();
    /** @type {Map<string, object>} userId → `info` vouched for by the member's token (1.1; absent: none) */
    this.info = new Map();
    /** @type {number | null} the `seq` of the last presence event applied (null before the first snapshot) */
    this.seq = null;
    /** @type {"announce" | "interval" | null} */
    this.mode = null;
    /** @type {number} occupancy as last reported by the broker */
    this.occupancy = 0;
    /** @type {boolean} true while a truncated snapshot is being completed page by page */
    this.loading = false;
    /**
     * @type {"joining" | "joined" | "retrying" | "error"} this channel's membership as the
     * client knows it: `joining` until the join (or, offline, the reconnect that applies it)
     * succeeds; `retrying` after a join failed with a code worth retrying (`RATE_LIMITED`,
     * `UNAVAILABLE`, `TIMEOUT`, `INTERNAL`); `error` after a rejoin was refused (the roster is
     * kept, tried again after the next reconnect). The `status` event tells each change.
     */
    this.status = "joining";
    /** @type {Error | null} why the last join failed (`retrying`, `error`) */
    this.error = null;
  }

  /** Events that arrived before the first snapshot. */
  #early = [];
  /** While a resync after a `seq` gap runs: the events that arrived since the gap (else null). */
  #resync = null;
  /** Own changes that step the channel's `seq` without an event to this client (see `allowSkippedSeq`). */
  #skipsAllowed = 0;

  /** True after a `seq` gap until a listing (`applyListing`) or a snapshot replaces the roster. */
  get resyncing() {
    return this.#resync !== null;
  }

  /**
   * Lets the next events skip `n` more `seq` values without counting as a gap: events about
   * this user (its own `setState`, a key of its own that expired) step the channel's `seq` but
   * are not sent to it (announce mode). The client calls this; a snapshot clears it.
   * @param {number} [n]
   */
  allowSkippedSeq(n = 1) {
    this.#skipsAllowed += n;
  }

  /**
   * Sets `status` (and `error`), emitting `status` `{status, error, retryInMs?}` when it changed.
   * The client calls this.
   * @param {"joining" | "joined" | "retrying" | "error"} status
   * @param {Error | null} [error]
   * @param {number} [retryInMs] with `retrying`: the delay before the next attempt
   */
  setStatus(status, error = null, retryInMs) {
    if (status === this.status && error === this.error) return;
    this.status = status;
    this.error = error;
    this.emit("status", retryInMs === undefined ? { status, error } : { status, error, retryInMs });
  }

  /** The members' ids in byte order of their UTF-8 encoding, as the broker orders them. */
  sortedUserIds() {
    const encoder = new TextEncoder();
    return [...this.members.keys()]
      .map((userId) => [userId, encoder.encode(userId)])
      .sort((a, b) => compareBytes(a[1], b[1]))
      .map(([userId]) => userId);
  }

  /**
   * Applies one presence event of this channel. Events older than the roster's `seq` are
   * ignored; events that arrive before the first snapshot wait for it.
   * @param {object} event a `presence` event
   * @returns {boolean} whether the event was applied
   */
  apply(event) {
    if (event.type === "snapshot") {
      this.members.clear();
      this.info.clear();
      for (const member of event.snapshot ?? []) {
        this.members.set(member.userId, member.state ?? {});
        this.#noteInfo(member.userId, member.info);
      }
      this.seq = event.seq ?? null;
      this.#skipsAllowed = 0;
      this.#noteCounts(event);
      const changes = [...this.members].map(([userId, state]) => ({ kind: "join", userId, state }));
      this.emit("change", { type: "snapshot", changes, event });
      // Waiting events (before the first snapshot, or during a resync) older than it are ignored.
      const early = [...this.#early.splice(0), ...(this.#resync ?? [])];
      this.#resync = null;
      for (const waiting of early) this.apply(waiting);
      return true;
    }
    if (this.seq === null) {
      this.#early.push(event);
      return false;
    }
    if (this.#resync) {
      this.#resync.push(event);
      return false;
    }
    if (typeof event.seq === "number") {
      if (event.seq <= this.seq) return false; // already shown
      const skipped = event.seq - this.seq - 1;
      if (skipped > this.#skipsAllowed) {
        // A gap: events were lost. Wait for a listing (the client asks for one).
        this.#resync = [event];
        this.emit("gap", { expectedSeq: this.seq + 1, receivedSeq: event.seq });
        return false;
      }
      this.#skipsAllowed -= skipped;
    }
    const changes = [];
    switch (event.type) {
      case "join":
      case "stateChanged":
        changes.push({ kind: event.type === "join" ? "join" : "state", userId: event.publisher, state: event.state ?? {} });
        this.members.set(event.publisher, event.state ?? {});
        if (event.type === "join") this.#noteInfo(event.publisher, event.info);
        break;
      case "leave":
      case "timeout":
        changes.push({ kind: event.type, userId: event.publisher });
        this.members.delete(event.publisher);
        this.info.delete(event.publisher);
        break;
      case "interval": {
        // The order matters: joins (empty state), then leaves and timeouts, then states.
        const lists = event.interval ?? {};
        for (const userId of lists.join ?? []) {
          this.members.set(userId, {});
          this.#noteInfo(userId, lists.joinInfo?.[userId]);
          changes.push({ kind: "join", userId, state: {} });
        }
        for (const kind of ["leave", "timeout"]) {
          for (const userId of lists[kind] ?? []) {
            this.members.delete(userId);
            this.info.delete(userId);
            changes.push({ kind, userId });
          }
        }
        for (const { userId, state } of lists.stateChanged ?? []) {
          this.members.set(userId, state ?? {});
          changes.push({ kind: "state", userId, state: state ?? {} });
        }
        break;
      }
      default:
        return false;
    }
    if (typeof event.seq === "number") this.seq = event.seq;
    this.#noteCounts(event);
    this.emit("change", { type: event.type, changes, event });
    return true;
  }

  /**
   * Adds one `getOnlineUsers` page (with states) while completing a truncated snapshot.
   * Must run in arrival order with the events (the client does this).
   * @param {{userId: string, state?: object, info?: object}[]} users
   */
  applyPage(users) {
    const changes = [];
    for (const { userId, state, info } of users) {
      this.members.set(userId, state ?? {});
      this.#noteInfo(userId, info);
      changes.push({ kind: "join", userId, state: state ?? {} });
    }
    this.emit("change", { type: "page", changes, event: null });
  }

  /**
   * Replaces the members with a complete listing (every `getOnlineUsers` page, with states)
   * read after a `seq` gap, whose `seq` is the one of its first page; then applies the events
   * that arrived since the gap and are newer than it (PROTOCOL §4: listing + the events after
   * its `seq` = the exact roster). Emits `change` with type `resync` (the differences).
   * Ignored (returns false) when no resync is waiting, or the listing is older than the roster.
   * @param {{userId: string, state?: object, info?: object}[]} users
   * @param {number} seq
   * @returns {boolean}
   */
  applyListing(users, seq) {
    if (!this.#resync || (this.seq !== null && seq < this.seq)) return false;
    const before = new Map(this.members);
    this.members.clear();
    this.info.clear();
    const changes = [];
    for (const { userId, state, info } of users) {
      this.members.set(userId, state ?? {});
      this.#noteInfo(userId, info);
      const old = before.get(userId);
      if (!old) changes.push({ kind: "join", userId, state: state ?? {} });
      else if (!sameState(old, state ?? {})) changes.push({ kind: "state", userId, state: state ?? {} });
    }
    for (const userId of before.keys()) if (!this.members.has(userId)) changes.push({ kind: "leave", userId });
    this.seq = seq;
    this.#skipsAllowed = 0;
    this.occupancy = this.members.size;
    const waiting = this.#resync;
    this.#resync = null;
    this.emit("change", { type: "resync", changes, event: null });
    for (const event of waiting) this.apply(event);
    return true;
  }

  /**
   * Records this user's own state after a successful `setState`/`removeState`/`join`
   * (the broker does not send events about a user to that user's sessions in announce mode).
   * @param {Record<string, string>} state the full state from the reply
   */
  applySelfState(state) {
    if (!this.members.has(this.selfUserId) && this.seq === null) return;
    this.members.set(this.selfUserId, state ?? {});
    this.emit("change", { type: "self", changes: [{ kind: "state", userId: this.selfUserId, state }], event: null });
  }

  #noteInfo(userId, info) {
    if (info && typeof info === "object") this.info.set(userId, info);
    else this.info.delete(userId);
  }

  #noteCounts(event) {
    if (event.mode) this.mode = event.mode;
    if (typeof event.occupancy === "number") this.occupancy = event.occupancy;
  }
}

/** Whether two states hold the same keys and values. */
function sameState(a, b) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** Compares two UTF-8 byte arrays (the broker's order for user ids). */
function compareBytes(ea, eb) {
  for (let i = 0; i < Math.min(ea.length, eb.length); i++) {
    if (ea[i] !== eb[i]) return ea[i] - eb[i];
  }
  return ea.length - eb.length;
}

/**
 * Opens a client and logs in. Resolves once logged in; rejects with the login error.
 * @param {string | string[]} url e.g. `ws://127.0.0.1:8080/v1`; several URLs (the nodes of a
 *   cluster): the first is dialled first, and each reconnect tries the next one, so a session
 *   resumes on another node when its node stops
 * @param {ClientOptions} options
 * @returns {Promise<RollcallClient>}
 */
export async function connect(url, options) {
  const client = new RollcallClient(url, options);
  await client.open();
  return client;
}

/**
 * @typedef {object} ClientOptions
 * @property {string} userId
 * @property {string} [platform] `web` (default here), `ios`, `android`, `macos`, `windows`, `linux`, `cli`, `other`
 * @property {string} [token] JWT, when the broker runs with `auth.mode: "jwt"`
 * @property {() => string | Promise<string>} [getToken] (1.1) returns a fresh JWT for this user:
 *   called for every login (the first one only when `token` is not given), on the broker's
 *   `refreshRequired` notice (then `refresh` sends it), and once more when a reconnect is
 *   refused with `UNAUTHORIZED` or the session is closed with 4401 (token expired)
 * @property {string} [customStatus] set at the first login
 * @property {number} [presenceTimeout] seconds the broker holds the session after a drop (5–300)
 * @property {{initialMs?: number, maxMs?: number, factor?: number}} [backoff] reconnect delays
 * @property {boolean} [reconnect] reconnect after a drop (default true)
 * @property {number} [resumeWindowMs] after a drop, how long (ms) a login that did not resume
 *   is logged out again and the resume retried on the next URL, before the client settles for
 *   a new session; default 5000 with several URLs (a killed node's sessions become resumable
 *   only once the others declare it dead), 0 with one (set it for one URL in front of a cluster)
 * @property {string} [subprotocol] WebSocket subprotocol to offer (default `rollcall.v1`; `null`: none)
 * @property {number} [requestTimeoutMs] how long (ms) a request waits for its reply before it
 *   rejects with `TIMEOUT` (default 10000; the login too, which then counts as a failed attempt)
 */

/**
 * A logged-in connection to a Rollcall broker that survives network drops.
 *
 * Events (subscribe with `on(type, handler)`):
 * - `connection` `{state, attempt?, delayMs?, code?, reason?}` — state is `connecting`,
 *   `online`, `reconnecting` or `closed`;
 * - `login` — the login result (also after each reconnect; `resumed` tells which kind);
 * - `presence` `{event, roster}` — every presence event, after the roster applied it;
 * - `message` — a `message` event;
 * - `userStatus` `{records}` — status records that changed (also from replies);
 * - `subscriptions` `{added, removed}` — this user's subscriptions changed;
 * - `session` — a `session` event (1.1: `{type: "refreshRequired", expiresAt}`; with a
 *   `getToken` option the client refreshes by itself, else call `refresh(token)`);
 * - `token` `{expiresAt}` — a login or `refresh` put a new token in force (1.1);
 * - `error` `{op, channel?, error}` — a request the client made by itself failed (a rejoin, a
 *   page, an automatic `refresh`);
 * - `event` — every event, raw.
 */
export class RollcallClient extends Emitter {
  /**
   * @param {string | string[]} url one URL, or the URLs of a cluster's nodes (tried in turn)
   * @param {ClientOptions} options
   */
  constructor(url, options) {
    super();
    /** @type {string[]} every URL to try, in turn */ this.urls = Array.isArray(url) ? [...url] : [url];
    if (this.urls.length === 0) throw new TypeError("connect needs at least one URL");
    /** @type {string} the URL dialled last */ this.url = this.urls[0];
    /** @type {ClientOptions} */ this.options = { platform: "web", reconnect: true, ...options };
    /** @type {"idle" | "connecting" | "online" | "reconnecting" | "closed"} */
    this.state = "idle";
    /** @type {object | null} the latest login result (`limits`, `sessionId`, …) */
    this.session = null;
    /** @type {number | null} when the token in force expires (ms; 1.1), `null` without one (auth mode `none`) */
    this.expiresAt = null;
    /** @type {Map<string, Roster>} joined channels by `channelKey` */
    this.rosters = new Map();
    /** @type {Map<string, object>} user-status records by userId */
    this.statuses = new Map();
    /** @type {Set<string>} users this user subscribes to (as far as this client knows) */
    this.subscriptions = new Set();
    this.#backoff = { ...DEFAULT_BACKOFF, ...(options.backoff ?? {}) };
    this.#resumeWindowMs = options.resumeWindowMs ?? (this.urls.length > 1 ? DEFAULT_CLUSTER_RESUME_WINDOW_MS : 0);
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  #socket = null;
  #nextId = 1;
  #pending = new Map(); // id → {resolve, reject, onReply, timer}
  #requestTimeoutMs;
  #lastReceived = 0; // Date.now() when the current socket last received a frame
  #livenessTimer = null;
  #pinging = false; // a liveness ping is waiting for its reply
  // channelKey → the app's intent to be in the channel: {flags, state, ttlSeconds, confirmed (a
  // join of the channel succeeded, this intent's or an earlier one's), applied (this intent's
  // join succeeded: a join again sends the last own state, not the call's), byItself (sent by
  // the client, not by a join() call now), waiters (join() promises), timer (a retry), attempt}
  #joins = new Map();
  #statusCalls = []; // subscribe/unsubscribe made offline, in order: {op, userIds, duration, resolve, reject}
  #flushingStatusCalls = false;
  #resyncs = new Set(); // rosters whose listing after a seq gap is being read
  #opening = null; // {resolve, reject} of open() until the first login (or the end)
  #lastError = null; // why the last attempt failed (open() rejects with it when the client ends)
  #backoff;
  #attempt = 0;
  #retryTimer = null;
  #resumeToken = null;
  #resumeWindowMs;
  #resumeUntil = null; // while Date.now() is before this, a login that did not resume is logged out and retried
  #closing = false;
  #firstLogin = true;
  #refusals = 0; // logins refused with UNAUTHORIZED in a row (a fresh token is tried once more)
  #noticeAnswered = null; // the `expiresAt` of the last refreshRequired this client refreshed for
  #ttlTimers = new Map(); // channelKey → Map(state key → {timer, expired}) for this user's keys set with ttlSeconds

  /** This client's user id. */
  get userId() {
    return this.options.userId;
  }

  /**
   * Connects and logs in. Resolves with the first login's result. A connection that fails,
   * or a login answered `RATE_LIMITED`, `UNAVAILABLE`, `INTERNAL` or `TIMEOUT`, is retried with
   * the backoff (`connection` events say `reconnecting`); it rejects when the client ends
   * instead: a login refused for good (`UNAUTHORIZED` without `getToken`, an invalid
   * argument), `reconnect: false`, or `close()`.
   * @returns {Promise<object>}
   */
  open() {
    this.#closing = false;
    this.#refusals = 0;
    this.#resumeUntil = null;
    return new Promise((resolve, reject) => {
      this.#opening = { resolve, reject };
      this.#dial("connecting").catch(() => {
        /* open() settles on the first login or when the client ends */
      });
    });
  }

  /** Whether requests can go out now (logged in, socket open). */
  #isOnline() {
    return this.state === "online" && this.#socket?.readyState === WebSocket.OPEN;
  }

  /**
   * Sends one request; resolves with its `result`, rejects with a `RollcallError` (`TIMEOUT`
   * when no reply came within `timeoutMs`, default the `requestTimeoutMs` option).
   * @param {string} op
   * @param {object} [args]
   * @param {{timeoutMs?: number}} [options]
   * @returns {Promise<any>}
   */
  request(op, args = {}, options = {}) {
    return this.#send(op, args, null, options.timeoutMs);
  }

  /**
   * Joins a channel and returns its roster (filled by the snapshot that follows).
   * With `options.ttlSeconds` (1.1) the keys of `options.state` expire like `setState`'s.
   *
   * The roster is in `rosters` at once, with `status` `joining`. Offline (connecting or
   * reconnecting) the join is kept and sent after the next login; the last of `join` and
   * `leave` for a channel wins. Resolves with the roster once the broker accepted the join;
   * rejects when it refused it (the roster is then removed), when `leave` came first
   * (`DISCONNECTED`), or when the client closed. `RATE_LIMITED`, `UNAVAILABLE`, `TIMEOUT` and
   * `INTERNAL` are retried (status `retrying`), after `retryAfterMs` when the broker gives one.
   * @param {string} channel
   * @param {{channelType?: string, presence?: boolean, messages?: boolean, state?: Record<string,string>, ttlSeconds?: number}} [options]
   * @returns {Promise<Roster>}
   */
  join(channel, options = {}) {
    if (this.state === "closed") return Promise.reject(new RollcallError("DISCONNECTED", "client closed"));
    const channelType = options.channelType ?? "message";
    const key = channelKey(channel, channelType);
    const previous = this.#joins.get(key);
    if (previous) clearTimeout(previous.timer);
    const intent = {
      flags: { channel, channelType, presence: options.presence ?? true, messages: options.messages ?? true },
      state: options.state,
      ttlSeconds: options.state ? options.ttlSeconds : undefined,
      confirmed: previous?.confirmed ?? false,
      applied: false,
      byItself: false,
      waiters: previous?.waiters ?? [],
      timer: null,
      attempt: 0,
    };
    this.#joins.set(key, intent);
    let roster = this.rosters.get(key);
    if (!roster) {
      roster = new Roster(channel, channelType, this.userId);
      this.rosters.set(key, roster);
    }
    const joined = new Promise((resolve, reject) => intent.waiters.push({ resolve, reject }));
    if (this.#isOnline()) this.#applyJoin(key, intent);
    return joined;
  }

  /**
   * Sends the join of an intent. A first join (or one with new options) sends the call's
   * state; a join again after a session that was not resumed sends this user's last state
   * (without the keys set with a TTL: they would not expire any more).
   */
  #applyJoin(key, intent) {
    const roster = this.rosters.get(key);
    const args = { ...intent.flags };
    if (!intent.applied) {
      if (intent.state) args.state = intent.state;
      if (intent.state && intent.ttlSeconds !== undefined) args.ttlSeconds = intent.ttlSeconds;
    } else {
      const expiring = this.#ttlTimers.get(key);
      const state = { ...(roster.members.get(this.userId) ?? {}) };
      for (const stateKey of expiring?.keys() ?? []) delete state[stateKey];
      this.#clearTTL(key);
      if (Object.keys(state).length) args.state = state;
    }
    // Own state changes step the channel's seq without an event to this client.
    if (args.state && roster.seq !== null && roster.mode !== "interval") roster.allowSkippedSeq();
    if (roster.status !== "joined") roster.setStatus("joining", roster.error);
    this.#send("join", args, (reply) => {
      if (!reply.ok || this.#joins.get(key) !== intent) return;
      roster.mode = reply.result.mode;
      roster.occupancy = reply.result.occupancy;
      if (args.state) this.#noteTTL(key, Object.keys(args.state), args.ttlSeconds);
    }).then(
      (result) => {
        if (this.#joins.get(key) !== intent) return; // left, or joined again, meanwhile
        intent.confirmed = true;
        intent.applied = true;
        intent.attempt = 0;
        roster.joinResult = result;
        roster.setStatus("joined");
        for (const waiter of intent.waiters.splice(0)) waiter.resolve(roster);
      },
      (error) => this.#joinFailed(key, intent, error),
    );
  }

  /**
   * A join failed. `DISCONNECTED`: kept, sent again after the next login. Worth retrying:
   * again after `retryAfterMs` or the backoff (status `retrying`). Refused: a join the app was
   * never told succeeded is dropped and its promises reject; a join again of a channel the app
   * holds keeps its roster with status `error` (and is tried again after the next login).
   */
  #joinFailed(key, intent, error) {
    if (this.#joins.get(key) !== intent) return;
    const roster = this.rosters.get(key);
    const channel = intent.flags.channel;
    if (error.code === "DISCONNECTED") {
      roster.setStatus("joining", error);
      return;
    }
    const byItself = intent.confirmed || intent.byItself;
    if (RETRYABLE_CODES.has(error.code)) {
      const retryInMs = error.retryAfterMs ?? this.#backoffDelay(intent.attempt++);
      roster.setStatus("retrying", error, retryInMs);
      this.emit("error", { op: "join", channel, error, retryInMs });
      intent.timer = setTimeout(() => {
        intent.timer = null;
        if (this.#joins.get(key) === intent && this.#isOnline()) {
          intent.byItself = true;
          this.#applyJoin(key, intent);
        }
      }, retryInMs);
      intent.timer.unref?.();
      return;
    }
    for (const waiter of intent.waiters.splice(0)) waiter.reject(error);
    if (byItself) this.emit("error", { op: "join", channel, error });
    if (!intent.confirmed) {
      this.#joins.delete(key);
      this.rosters.delete(key);
      this.#clearTTL(key);
    }
    roster.setStatus("error", error);
  }

  /**
   * Leaves a channel and forgets its roster (at once: events of the channel are ignored from
   * now on). Offline, the leave is kept: a join not sent yet is dropped (its promise rejects
   * with `DISCONNECTED`), and a resumed session leaves every channel this client does not hold.
   * @param {string} channel
   * @param {string} [channelType]
   */
  async leave(channel, channelType = "message") {
    const key = channelKey(channel, channelType);
    const intent = this.#joins.get(key);
    if (intent) {
      clearTimeout(intent.timer);
      const superseded = new RollcallError("DISCONNECTED", `left ${channel} before the join was applied`);
      for (const waiter of intent.waiters.splice(0)) waiter.reject(superseded);
    }
    this.#joins.delete(key);
    this.rosters.delete(key);
    this.#clearTTL(key);
    if (!this.#isOnline()) return; // a resume leaves it; a new session never joined it
    try {
      await this.#send("leave", { channel, channelType }, null);
    } catch (error) {
      if (error.code !== "DISCONNECTED") throw error; // the link dropped: the resume leaves it
    }
  }

  /**
   * Merges keys into this user's state in a channel; resolves with the full state.
   * With `options.ttlSeconds` (protocol 1.1) the broker removes the keys set by this call
   * that many seconds later (typing indicators: `setState(ch, {typing: "1"}, "message", {ttlSeconds: 3})`).
   * @param {string} channel
   * @param {Record<string,string>} state
   * @param {"message"|"stream"} [channelType]
   * @param {{ttlSeconds?: number}} [options]
   * @returns {Promise<{state: Record<string,string>, pending?: boolean}>}
   */
  setState(channel, state, channelType = "message", options = {}) {
    const args = { channel, channelType, state };
    if (options.ttlSeconds !== undefined) args.ttlSeconds = options.ttlSeconds;
    return this.#send("setState", args, (reply) => {
      if (reply.ok && !reply.result.pending) this.#noteTTL(channelKey(channel, channelType), Object.keys(state), args.ttlSeconds);
      this.#ownChange(channel, channelType, reply);
      this.#selfState(channel, channelType, reply);
    });
  }

  /**
   * Removes keys from this user's state in a channel; resolves with the full state.
   * @param {string} channel
   * @param {string[]} keys
   * @param {"message"|"stream"} [channelType]
   * @returns {Promise<{state: Record<string,string>, pending?: boolean}>}
   */
  removeState(channel, keys, channelType = "message") {
    return this.#send("removeState", { channel, channelType, keys }, (reply) => {
      if (reply.ok) this.#noteTTL(channelKey(channel, channelType), keys, undefined);
      this.#ownChange(channel, channelType, reply);
      this.#selfState(channel, channelType, reply);
    });
  }

  /**
   * A member's state in a channel (membership not required); rejects with `USER_NOT_PRESENT`
   * when the user is not a member.
   * @param {string} channel
   * @param {string} userId
   * @param {"message"|"stream"} [channelType]
   * @returns {Promise<{userId: string, state: Record<string,string>}>}
   */
  getState(channel, userId, channelType = "message") {
    return this.request("getState", { channel, channelType, userId });
  }

  /**
   * Publishes any JSON value; resolves with `{recipients}`.
   * @param {string} channel
   * @param {any} message
   * @param {"message"|"stream"} [channelType]
   * @returns {Promise<{recipients: number}>}
   */
  publish(channel, message, channelType = "message") {
    return this.request("publish", { channel, channelType, message });
  }

  /**
   * One page of a channel's members (byte order of userId). Pass the reply's `nextPage` as `page`.
   * Note: `includeState` defaults to `true` here (the broker's default is `false`).
   * @returns {Promise<{totalOccupancy: number, seq: number, users: {userId: string, state?: object, info?: object}[], nextPage: string | null}>}
   */
  getOnlineUsers(channel, { channelType = "message", includeState = true, includeUserId, page, pageSize = 100 } = {}) {
    const args = { channel, channelType, includeState, pageSize };
    if (includeUserId !== undefined) args.includeUserId = includeUserId;
    if (page) args.page = page;
    return this.request("getOnlineUsers", args);
  }

  /**
   * Every member of a channel with states: follows `nextPage` to the end.
   * @param {string} channel
   * @param {"message"|"stream"} [channelType]
   * @returns {Promise<Map<string, Record<string,string>>>} userId → state, in byte order of userId
   */
  async getAllOnlineUsers(channel, channelType = "message") {
    const users = new Map();
    let page;
    do {
      const result = await this.getOnlineUsers(channel, { channelType, includeState: true, pageSize: 1000, page });
      for (const user of result.users) users.set(user.userId, user.state ?? {});
      page = result.nextPage;
    } while (page);
    return users;
  }

  /**
   * The channels a user is a member of (through any session, held ones included).
   * @param {string} userId
   * @returns {Promise<{totalChannel: number, channels: {channel: string, channelType: "message"|"stream"}[]}>}
   */
  getUserChannels(userId) {
    return this.request("getUserChannels", { userId });
  }

  /**
   * Round trip to the broker.
   * @returns {Promise<{serverTime: number}>}
   */
  ping() {
    return this.request("ping");
  }

  /**
   * Replaces the session's token (protocol 1.1, `auth.mode: "jwt"`) without dropping the
   * connection, e.g. on the `session` event `refreshRequired` (with a `getToken` option the
   * client does this by itself). Without `token`, asks `getToken()` for one. On success the
   * new token is also used for later reconnects and `expiresAt` follows it; a refused token
   * (`UNAUTHORIZED`) leaves the connection open and the old token in force.
   * @param {string} [token]
   * @returns {Promise<{expiresAt: number}>}
   */
  async refresh(token) {
    if (token === undefined) {
      if (!this.options.getToken) throw new TypeError("refresh() without a token needs the getToken option");
      token = await this.options.getToken();
    }
    return this.#send("refresh", { token }, (reply) => {
      if (!reply.ok) return;
      this.options.token = token;
      this.#noteExpiry(reply.result.expiresAt);
    });
  }

  /**
   * Sets (or with `null`/"" clears) this user's custom status; resolves with the new record.
   * @param {string | null} customStatus
   * @returns {Promise<object>}
   */
  async setCustomStatus(customStatus) {
    const result = await this.#send("setCustomStatus", { customStatus }, (reply) => {
      if (reply.ok) this.#noteStatuses([reply.result.status]);
    });
    return result.status;
  }

  /**
   * Current records of some users (this user included, at most 500); updates the cache.
   * @param {string[]} userIds
   * @returns {Promise<{statuses: object[], failed: {userId: string, code: string}[]}>}
   */
  async getUserStatus(userIds) {
    const result = await this.#send("getUserStatus", { userIds }, (reply) => {
      if (reply.ok) this.#noteStatuses(reply.result.statuses);
    });
    return result;
  }

  /**
   * Follows users' status; their records arrive as `userStatus` events from now on.
   * Offline (connecting or reconnecting), the call is kept and sent after the next login, in
   * order with `unsubscribe` calls (so the last one wins); the promise settles then.
   * @param {string[]} userIds
   * @param {number} [duration] seconds (60–2592000, default 86400)
   * @returns {Promise<{statuses: object[], failed: {userId: string, code: string}[]}>}
   */
  subscribe(userIds, duration) {
    if (!this.#isOnline() && this.state !== "closed") return this.#keepStatusCall("subscribe", userIds, duration);
    return this.#subscribeNow(userIds, duration);
  }

  #subscribeNow(userIds, duration) {
    const args = { userIds };
    if (duration) args.duration = duration;
    return this.#send("subscribeUserStatus", args, (reply) => {
      if (!reply.ok) return;
      const failed = new Set(reply.result.failed.map((f) => f.userId));
      const added = userIds.filter((id) => !failed.has(id) && !this.subscriptions.has(id));
      for (const id of added) this.subscriptions.add(id);
      this.#noteStatuses(reply.result.statuses);
      if (added.length) this.emit("subscriptions", { added, removed: [] });
    });
  }

  /**
   * Stops following users (no list: all of them). Offline, kept as `subscribe` is.
   * @param {string[]} [userIds]
   * @returns {Promise<{failed: {userId: string, code: string}[]}>}
   */
  unsubscribe(userIds) {
    if (!this.#isOnline() && this.state !== "closed") return this.#keepStatusCall("unsubscribe", userIds);
    return this.#unsubscribeNow(userIds);
  }

  #unsubscribeNow(userIds) {
    const args = userIds && userIds.length ? { userIds } : {};
    return this.#send("unsubscribeUserStatus", args, (reply) => {
      if (!reply.ok) return;
      const removed = userIds && userIds.length ? userIds.filter((id) => this.subscriptions.has(id)) : [...this.subscriptions];
      for (const id of removed) this.subscriptions.delete(id);
      if (removed.length) this.emit("subscriptions", { added: [], removed });
    });
  }

  /** Keeps an offline `subscribe`/`unsubscribe` for the next login. */
  #keepStatusCall(op, userIds, duration) {
    return new Promise((resolve, reject) => this.#statusCalls.push({ op, userIds, duration, resolve, reject }));
  }

  /**
   * After a login: sends the kept `subscribe`/`unsubscribe` calls in order. A call that fails
   * with a code worth retrying is sent again after `retryAfterMs` (or the backoff); one cut by
   * a drop waits for the next login.
   */
  async #sendStatusCalls() {
    if (this.#flushingStatusCalls) return;
    this.#flushingStatusCalls = true;
    let attempt = 0;
    try {
      while (this.#statusCalls.length && this.#isOnline()) {
        const call = this.#statusCalls[0];
        try {
          const result = call.op === "subscribe" ? await this.#subscribeNow(call.userIds, call.duration) : await this.#unsubscribeNow(call.userIds);
          if (this.#statusCalls[0] === call) this.#statusCalls.shift();
          attempt = 0;
          call.resolve(result);
        } catch (error) {
          if (this.#statusCalls[0] !== call || error.code === "DISCONNECTED") return; // closed, or the next login sends it
          if (!RETRYABLE_CODES.has(error.code)) {
            this.#statusCalls.shift();
            call.reject(error);
            continue;
          }
          await new Promise((resolve) => setTimeout(resolve, error.retryAfterMs ?? this.#backoffDelay(attempt++)));
        }
      }
    } finally {
      this.#flushingStatusCalls = false;
    }
  }

  /**
   * One page of this user's subscriptions (or the given ones, unpaged); updates the status cache.
   * @param {{userIds?: string[], page?: string, pageSize?: number}} [options]
   * @returns {Promise<{subscriptions: {userId: string, expiresAt: number, status: object}[], nextPage: string | null, failed?: {userId: string, code: string}[]}>}
   */
  getSubscriptions({ userIds, page, pageSize } = {}) {
    const args = {};
    if (userIds) args.userIds = userIds;
    if (page) args.page = page;
    if (pageSize) args.pageSize = pageSize;
    return this.#send("getSubscriptions", args, (reply) => {
      if (reply.ok) this.#noteStatuses(reply.result.subscriptions.map((s) => s.status));
    });
  }

  /** Reads this user's subscriptions (all pages) into `subscriptions` and the status cache. */
  async loadSubscriptions() {
    let page;
    const seen = new Set();
    do {
      const args = { pageSize: 200 };
      if (page) args.page = page;
      const result = await this.request("getSubscriptions", args);
      for (const sub of result.subscriptions) seen.add(sub.userId);
      this.#noteStatuses(result.subscriptions.map((s) => s.status));
      page = result.nextPage;
    } while (page);
    const added = [...seen].filter((id) => !this.subscriptions.has(id));
    const removed = [...this.subscriptions].filter((id) => !seen.has(id));
    this.subscriptions = seen;
    if (added.length || removed.length) this.emit("subscriptions", { added, removed });
  }

  /** Ends the session on purpose (others see `leave`, status `loggedOut`) and closes. */
  async logout() {
    this.#closing = true;
    try {
      await this.request("logout");
    } finally {
      this.close();
    }
  }

  /** Closes the connection without logging out (the broker sees a close frame). No reconnect. */
  close() {
    this.#closing = true;
    this.#lastError = new RollcallError("DISCONNECTED", "client closed");
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#livenessTimer);
    for (const key of [...this.#ttlTimers.keys()]) this.#clearTTL(key);
    const socket = this.#socket;
    this.#socket = null; // its close event is not reported again
    if (socket) {
      this.#failPending(new RollcallError("DISCONNECTED", "client closed"));
      socket.close(1000);
    }
    if (this.state !== "closed") this.#setState("closed", {});
  }

  // ---- connection ---------------------------------------------------------------------

  #setState(state, detail) {
    this.state = state;
    if (state === "closed") this.#settleOnEnd();
    this.emit("connection", { state, ...detail });
  }

  /**
   * The client ended (closed for good): `open()`, the joins and the status calls still waiting
   * for a login reject with why (`#lastError`, else `DISCONNECTED`).
   */
  #settleOnEnd() {
    const error = this.#lastError ?? new RollcallError("DISCONNECTED", "client closed");
    this.#opening?.reject(error);
    this.#opening = null;
    for (const intent of this.#joins.values()) {
      clearTimeout(intent.timer);
      for (const waiter of intent.waiters.splice(0)) waiter.reject(error);
    }
    for (const call of this.#statusCalls.splice(0)) call.reject(error);
  }

  /** The backoff delay of retry number `attempt` (0, 1, …): jittered in [base/2, base]. */
  #backoffDelay(attempt) {
    const { initialMs, maxMs, factor } = this.#backoff;
    const base = Math.min(maxMs, initialMs * factor ** attempt);
    return Math.round(base / 2 + Math.random() * (base / 2));
  }

  /**
   * The token for the next login: the `token` option at the first login, else a fresh one
   * from `getToken()` when there is one, else the last token that was in force.
   */
  async #loginToken() {
    if (this.options.getToken && !(this.#firstLogin && this.options.token)) {
      const token = await this.options.getToken();
      if (typeof token !== "string" || !token) throw new TypeError("getToken() must return a non-empty string");
      return token;
    }
    return this.options.token;
  }

  #noteExpiry(expiresAt) {
    this.expiresAt = typeof expiresAt === "number" ? expiresAt : null;
    this.emit("token", { expiresAt: this.expiresAt });
  }

  /**
   * On `refreshRequired`: asks `getToken()` for a token, then the broker to `refresh` with it.
   * Once per notice: when `getToken()` handed back the token already in force, the broker's
   * next notice names the same expiry, and answering it again would only loop.
   */
  #refreshByItself(notice) {
    if (notice.expiresAt !== undefined && notice.expiresAt === this.#noticeAnswered) return;
    this.#noticeAnswered = notice.expiresAt;
    this.refresh().catch((error) => this.emit("error", { op: "refresh", error }));
  }

  /** Gets a token, opens a socket and logs in; resolves with the login result. */
  async #dial(state) {
    this.#setState(state, { attempt: this.#attempt });
    let token;
    try {
      token = await this.#loginToken();
    } catch (error) {
      this.#lastError = error;
      // The token could not be had (e.g. the issuer is unreachable): like a failed connection.
      if (this.#firstLogin || this.#closing) {
        if (this.state !== "closed") this.#setState("closed", { reason: "getToken failed" });
      } else {
        this.#scheduleReconnect({ code: 1006, reason: `getToken failed: ${error?.message ?? error}` });
      }
      throw error;
    }
    if (this.#closing) throw new RollcallError("DISCONNECTED", "client closed");
    return this.#login(token);
  }

  /** Opens a socket and logs in with `token`; resolves with the login result. */
  #login(token) {
    return new Promise((resolve, reject) => {
      let socket;
      try {
        const subprotocol = this.options.subprotocol === undefined ? "rollcall.v1" : this.options.subprotocol;
        socket = subprotocol ? new WebSocket(this.url, subprotocol) : new WebSocket(this.url);
      } catch (error) {
        reject(error);
        return;
      }
      this.#socket = socket;
      let loggedIn = false;
      let refused = false; // the login was answered UNAUTHORIZED (or closed with 4401)
      let unresumed = false; // a new session while the held one may still resume: logged out, retried
      socket.onopen = async () => {
        const args = { userId: this.userId, platform: this.options.platform };
        if (token) args.token = token;
        if (this.options.presenceTimeout) args.presenceTimeout = this.options.presenceTimeout;
        if (this.#firstLogin && this.options.customStatus) args.customStatus = this.options.customStatus;
        if (this.#resumeToken) args.resumeToken = this.#resumeToken;
        try {
          const result = await this.#send("login", args, (reply) => {
            if (!reply.ok) return;
            unresumed = !reply.result.resumed && this.#stillResuming();
            // The held session's token is kept until a new session is accepted.
            if (!unresumed) this.#resumeToken = reply.result.resumeToken;
          });
          if (unresumed) {
            // It joined nothing, so nobody saw it; onclose schedules the next resume attempt.
            this.#send("logout", {}, null).catch(() => {});
            socket.close(CloseCode.LOGOUT, "not resumed yet");
            reject(new RollcallError("DISCONNECTED", "the session could not be resumed yet; retrying"));
            return;
          }
          loggedIn = true;
          this.#resumeUntil = null;
          this.#firstLogin = false;
          this.#attempt = 0;
          this.#refusals = 0;
          this.session = result;
          if (token) this.options.token = token;
          this.#noteExpiry(result.expiresAt);
          this.#watchLiveness(socket, abandon);
          this.#lastError = null;
          this.#setState("online", {});
          // Before the `login` event, so that a handler's own requests come after these.
          this.#rejoin(result.resumed ? result.channels ?? [] : null);
          this.emit("login", result);
          this.#opening?.resolve(result);
          this.#opening = null;
          resolve(result);
        } catch (error) {
          if (error.code === "UNAUTHORIZED") refused = true;
          this.#lastError = error;
          // A first login refused for good ends the client; one worth retrying is retried.
          if (this.#firstLogin && !RETRYABLE_CODES.has(error.code) && error.code !== "DISCONNECTED") this.#closing = true;
          // onclose decides whether a retry follows; a login that timed out may be on a dead
          // link, whose close would not be reported for a long time.
          if (error.code === "TIMEOUT") abandon("login timed out");
          else socket.close(4000, "login failed");
          reject(error);
        }
      };
      socket.onmessage = (message) => {
        this.#lastReceived = Date.now();
        this.#receive(message.data);
      };
      let ended = false;
      // Node 20's WebSocket (undici, --experimental-websocket) reports a failed connection
      // attempt with `error` only, never `close`: a socket that errs before it opened is over.
      socket.onerror = () => {
        if (socket.readyState !== WebSocket.OPEN) socket.onclose({ code: 1006, reason: "connection failed" });
      };
      // The link is taken for dead (liveness, or a login that timed out): handled at once as a
      // close without a close frame; the socket is closed and no longer listened to.
      let lostByLiveness = false;
      const abandon = (reason) => {
        if (ended) return;
        const onclose = socket.onclose;
        socket.onmessage = socket.onerror = socket.onclose = null;
        try {
          socket.close(4000, reason);
        } catch {
          /* already closing */
        }
        lostByLiveness = loggedIn;
        onclose({ code: 1006, reason });
      };
      socket.onclose = (event) => {
        if (ended) return; // once per socket (browsers send `close` after that `error`)
        ended = true;
        if (this.#socket === socket) clearTimeout(this.#livenessTimer);
        if (!loggedIn) {
          const error = new RollcallError("DISCONNECTED", `could not connect to ${this.url} (${event.code})`);
          this.#lastError = this.#lastError ?? error;
          reject(error);
        }
        if (this.#socket !== socket) return; // close() already reported it
        this.#socket = null;
        this.#failPending(new RollcallError("DISCONNECTED", `connection closed (${event.code})`));
        if (!loggedIn && event.code === CloseCode.UNAUTHORIZED) refused = true;
        if (refused) this.#refusals += 1;
        const final = this.#closing || !this.options.reconnect || (!unresumed && this.#endsForGood(event.code, refused));
        if (final) {
          this.#setState("closed", { code: event.code, reason: event.reason });
          return;
        }
        if (loggedIn) this.#startResumeWindow(event.code, lostByLiveness ? this.#livenessResumeMs() : 0);
        this.#scheduleReconnect(unresumed ? { code: event.code, reason: "not resumed yet" } : event);
      };
    });
  }

  /**
   * The connection of a logged-in session was lost with `code`: unless that ended the
   * session, logins that do not resume are refused by this client for `resumeWindowMs`.
   */
  #startResumeWindow(code, atLeastMs = 0) {
    const windowMs = Math.max(this.#resumeWindowMs, atLeastMs);
    const resumable = this.#resumeToken && windowMs > 0 && !SESSION_ENDED_CLOSE_CODES.has(code);
    this.#resumeUntil = resumable ? Date.now() + windowMs : null;
  }

  /** The liveness limits of the session (the login result's, else the broker defaults), in ms. */
  #heartbeatMs() {
    const limits = { ...DEFAULT_HEARTBEAT, ...(this.session?.limits ?? {}) };
    return { intervalMs: limits.heartbeatIntervalSeconds * 1000, timeoutMs: limits.heartbeatTimeoutSeconds * 1000 };
  }

  /** How long a resume is retried after liveness found the link dead (see LIVENESS_RESUME_MARGIN_MS). */
  #livenessResumeMs() {
    return 2 * this.#heartbeatMs().intervalMs + LIVENESS_RESUME_MARGIN_MS;
  }

  /**
   * Liveness (protocol 1.2 §3) of a logged-in socket: when nothing has been received for the
   * heartbeat interval, sends `ping`; when nothing has been received for the heartbeat timeout,
   * calls `lost()`, which takes the link for dead. Browsers cannot see the broker's WebSocket
   * pings, so this is how a sleeping laptop or a dead NAT is noticed.
   */
  #watchLiveness(socket, lost) {
    const { intervalMs, timeoutMs } = this.#heartbeatMs();
    const check = () => {
      if (this.#socket !== socket) return;
      const silentMs = Date.now() - this.#lastReceived;
      if (silentMs >= timeoutMs) {
        lost(`nothing received for ${Math.round(silentMs)} ms (heartbeat timeout)`);
        return;
      }
      if (silentMs >= intervalMs && !this.#pinging) {
        this.#pinging = true;
        this.#send("ping", {}, null, timeoutMs - silentMs)
          .catch(() => {})
          .finally(() => (this.#pinging = false));
      }
      // Pinged: look again at the timeout, or one interval on (the reply has come by then).
      schedule(silentMs >= intervalMs ? Math.min(timeoutMs - silentMs, intervalMs) : intervalMs - silentMs);
    };
    const schedule = (delayMs) => {
      this.#livenessTimer = setTimeout(check, Math.max(5, delayMs));
      this.#livenessTimer.unref?.(); // Node: liveness alone does not keep the process alive
    };
    clearTimeout(this.#livenessTimer);
    this.#pinging = false;
    this.#lastReceived = Date.now();
    schedule(intervalMs);
  }

  /** Whether the resume window is open: a login that did not resume is not kept. */
  #stillResuming() {
    return this.#resumeUntil !== null && Date.now() < this.#resumeUntil;
  }

  /**
   * Whether a close ends the client: 1000, 4403 and 4409 always; 4401 (token refused or
   * expired) and a login refused with `UNAUTHORIZED` only without `getToken`, or when the
   * login with the extra fresh token was refused too.
   */
  #endsForGood(code, refused) {
    if (refused || code === CloseCode.UNAUTHORIZED) return !this.options.getToken || this.#refusals > 1;
    return FINAL_CLOSE_CODES.has(code);
  }

  #scheduleReconnect(event) {
    let delayMs = this.#backoffDelay(this.#attempt);
    // No later than the end of the resume window: then a new session is accepted.
    if (this.#stillResuming()) delayMs = Math.min(delayMs, this.#resumeUntil - Date.now());
    this.#attempt += 1;
    // Several nodes: the next one (its node may be the one that went away).
    this.url = this.urls[(this.urls.indexOf(this.url) + 1) % this.urls.length];
    this.#setState("reconnecting", { attempt: this.#attempt, delayMs, code: event.code, reason: event.reason, url: this.url });
    this.#retryTimer = setTimeout(() => {
      this.#dial("reconnecting").catch(() => {
        /* onclose schedules the next attempt */
      });
    }, delayMs);
  }

  /**
   * After a login: applies the app's intent. After a login that did not resume
   * (`resumedChannels` null): joins every channel again, with this user's last state (without
   * the keys set with a TTL: they would not expire any more), and the joins made offline. After
   * a resume: leaves the channels the held session is in that this client does not hold (a
   * leave made offline, or whose reply was lost), and sends the joins it is not in or not
   * confirmed in (made offline, or whose reply was lost). Then the kept status calls.
   * @param {{channel: string, channelType: string}[] | null} resumedChannels
   */
  #rejoin(resumedChannels) {
    const kept = new Set((resumedChannels ?? []).map((c) => channelKey(c.channel, c.channelType ?? "message")));
    for (const { channel, channelType = "message" } of resumedChannels ?? []) {
      if (!this.#joins.has(channelKey(channel, channelType))) this.#send("leave", { channel, channelType }, null).catch(() => {});
    }
    for (const [key, intent] of this.#joins) {
      clearTimeout(intent.timer);
      intent.timer = null;
      intent.attempt = 0;
      const roster = this.rosters.get(key);
      if (kept.has(key) && intent.applied) {
        roster.setStatus("joined"); // the resume's snapshot follows
        continue;
      }
      if (resumedChannels === null) roster.seq = null; // the snapshot that follows starts a new sequence
      intent.byItself = true;
      this.#applyJoin(key, intent);
    }
    if (resumedChannels === null && this.statuses.size) {
      this.getUserStatus([...this.statuses.keys()].slice(0, 500)).catch(() => {});
    }
    this.#sendStatusCalls();
  }

  /**
   * A `seq` gap in `roster`: reads the whole listing (`getOnlineUsers` pages, with states) and
   * hands it to the roster, which then applies the events that came meanwhile. Retried after
   * `retryAfterMs` or the backoff when worth it; a drop leaves it to the resume's snapshot.
   */
  async #resync(roster) {
    if (this.#resyncs.has(roster)) return;
    this.#resyncs.add(roster);
    const key = channelKey(roster.channel, roster.channelType);
    const current = () => this.rosters.get(key) === roster && roster.resyncing;
    let attempt = 0;
    try {
      while (current() && this.#isOnline()) {
        try {
          const users = [];
          let seq = null;
          let page;
          do {
            const args = { channel: roster.channel, channelType: roster.channelType, includeState: true, pageSize: 1000 };
            if (page) args.page = page;
            const result = await this.#send("getOnlineUsers", args, null);
            seq ??= result.seq;
            users.push(...result.users);
            page = result.nextPage;
          } while (page && current());
          if (current()) roster.applyListing(users, seq);
          attempt = 0;
        } catch (error) {
          this.emit("error", { op: "getOnlineUsers", channel: roster.channel, error });
          if (!RETRYABLE_CODES.has(error.code)) return;
          await new Promise((resolve) => setTimeout(resolve, error.retryAfterMs ?? this.#backoffDelay(attempt++)));
        }
      }
    } finally {
      this.#resyncs.delete(roster);
    }
  }

  /** A `setState`/`removeState` reply: this user's change stepped the channel's `seq` (announce mode). */
  #ownChange(channel, channelType, reply) {
    if (!reply.ok || reply.result.pending) return;
    const roster = this.rosters.get(channelKey(channel, channelType));
    if (roster && roster.seq !== null && roster.mode !== "interval") roster.allowSkippedSeq();
  }

  /**
   * Keeps track of this user's keys that the broker will remove by itself: `keys` were just
   * set (with `ttlSeconds`: they expire then; without: any earlier deadline is cleared, as the
   * broker clears it). When a deadline passes, the key leaves this user's own roster entry,
   * since in announce mode the broker sends no event about a user to that user. For a short
   * grace period after that (the broker removes the key up to 0.25 s after the deadline) the
   * key is also left out of the states in later replies, so that it does not come back.
   */
  #noteTTL(key, keys, ttlSeconds) {
    let timers = this.#ttlTimers.get(key);
    for (const stateKey of keys) {
      if (timers?.has(stateKey)) {
        clearTimeout(timers.get(stateKey).timer);
        timers.delete(stateKey);
      }
    }
    if (typeof ttlSeconds === "number") {
      if (!timers) this.#ttlTimers.set(key, (timers = new Map()));
      for (const stateKey of keys) {
        const entry = { expired: false, timer: null };
        entry.timer = setTimeout(() => {
          entry.expired = true;
          entry.timer = setTimeout(() => {
            if (timers.get(stateKey) === entry) timers.delete(stateKey);
            if (timers.size === 0 && this.#ttlTimers.get(key) === timers) this.#ttlTimers.delete(key);
          }, TTL_GRACE_MS);
          entry.timer?.unref?.();
          const roster = this.rosters.get(key);
          const state = roster?.members.get(this.userId);
          if (state && stateKey in state) {
            // The broker's removal steps the channel's seq without an event to this client.
            if (roster.seq !== null && roster.mode !== "interval") roster.allowSkippedSeq();
            roster.applySelfState(this.#withoutExpired(key, state));
          }
        }, ttlSeconds * 1000);
        entry.timer?.unref?.(); // Node: a pending expiry does not keep the process alive
        timers.set(stateKey, entry);
      }
    }
    if (timers && timers.size === 0) this.#ttlTimers.delete(key);
  }

  /** `state` without this user's keys in channel `key` whose TTL has passed here. */
  #withoutExpired(key, state) {
    const timers = this.#ttlTimers.get(key);
    if (!timers) return state;
    const result = { ...state };
    for (const [stateKey, entry] of timers) if (entry.expired) delete result[stateKey];
    return result;
  }

  #clearTTL(key) {
    for (const entry of this.#ttlTimers.get(key)?.values() ?? []) clearTimeout(entry.timer);
    this.#ttlTimers.delete(key);
  }

  #failPending(error) {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const { reject, timer } of pending) {
      clearTimeout(timer);
      reject(error);
    }
  }

  /**
   * Sends a request. `onReply(reply)` runs synchronously when the reply is read, before any
   * later object of the same frame — so cached state changes in the broker's order. With no
   * reply within `timeoutMs` (default `requestTimeoutMs`) it rejects with `TIMEOUT`, and a reply
   * that comes later is ignored (its `onReply` does not run).
   */
  #send(op, args, onReply, timeoutMs = this.#requestTimeoutMs) {
    const socket = this.#socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      return Promise.reject(new RollcallError("DISCONNECTED", "not connected"));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, onReply, timer: null };
      if (Number.isFinite(timeoutMs) && timeoutMs > 0) {
        entry.timer = setTimeout(() => {
          if (this.#pending.get(id) !== entry) return;
          this.#pending.delete(id);
          reject(new RollcallError("TIMEOUT", `no reply to ${op} within ${Math.round(timeoutMs)} ms`, { code: "TIMEOUT", op, timeoutMs }));
        }, timeoutMs);
        entry.timer.unref?.();
      }
      this.#pending.set(id, entry);
      socket.send(JSON.stringify({ id, op, ...args }));
    });
  }

  /** Splits a frame on newlines and handles each object in order. */
  #receive(data) {
    if (typeof data !== "string") return;
    for (const line of data.split("\n")) {
      if (!line) continue;
      let object;
      try {
        object = JSON.parse(line);
      } catch {
        console.warn("rollcall: unreadable line from the broker", line);
        continue;
      }
      if ("event" in object) this.#dispatch(object);
      else this.#reply(object);
    }
  }

  #reply(reply) {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    clearTimeout(pending.timer);
    if (pending.onReply) {
      try {
        pending.onReply(reply);
      } catch (error) {
        console.error("rollcall: reply handler threw", error);
      }
    }
    if (reply.ok) pending.resolve(reply.result);
    else pending.reject(new RollcallError(reply.error?.code ?? "INTERNAL", reply.error?.message ?? "", reply.error ?? {}));
  }

  #dispatch(event) {
    this.emit("event", event);
    switch (event.event) {
      case "presence": {
        const roster = this.rosters.get(channelKey(event.channel, event.channelType));
        if (!roster) return;
        roster.apply(event);
        if (roster.resyncing) this.#resync(roster);
        if (event.type === "snapshot") {
          const own = roster.members.get(this.userId);
          const kept = own && this.#withoutExpired(channelKey(roster.channel, roster.channelType), own);
          if (kept && Object.keys(kept).length !== Object.keys(own).length) roster.applySelfState(kept);
          if (event.truncated && event.nextPage) this.#completeSnapshot(roster, event.nextPage);
        }
        this.emit("presence", { event, roster });
        break;
      }
      case "message":
        this.emit("message", event);
        break;
      case "userStatus":
        this.#noteStatuses(event.statuses ?? []);
        break;
      case "subscriptions": {
        for (const id of event.added ?? []) this.subscriptions.add(id);
        for (const id of event.removed ?? []) this.subscriptions.delete(id);
        this.emit("subscriptions", { added: event.added ?? [], removed: event.removed ?? [] });
        break;
      }
      case "session":
        this.emit("session", event);
        if (event.type === "refreshRequired" && this.options.getToken) this.#refreshByItself(event);
        break;
    }
  }

  /** Pages `getOnlineUsers` after a truncated snapshot, applying each page in arrival order. */
  async #completeSnapshot(roster, page) {
    roster.loading = true;
    try {
      while (page && this.rosters.get(channelKey(roster.channel, roster.channelType)) === roster) {
        const args = { channel: roster.channel, channelType: roster.channelType, includeState: true, pageSize: 1000, page };
        const result = await this.#send("getOnlineUsers", args, (reply) => {
          if (reply.ok) roster.applyPage(reply.result.users);
        });
        page = result.nextPage;
      }
    } catch (error) {
      this.emit("error", { op: "getOnlineUsers", channel: roster.channel, error });
    } finally {
      roster.loading = false;
    }
  }

  #selfState(channel, channelType, reply) {
    if (!reply.ok || reply.result.pending) return;
    const key = channelKey(channel, channelType);
    this.rosters.get(key)?.applySelfState(this.#withoutExpired(key, reply.result.state));
  }

  #noteStatuses(records) {
    const changed = [];
    for (const record of records) {
      const known = this.statuses.get(record.userId);
      if (known && known.lastUpdateTime > record.lastUpdateTime) continue; // older than what we hold
      this.statuses.set(record.userId, record);
      changed.push(record);
    }
    if (changed.length) this.emit("userStatus", { records: changed });
  }
}
