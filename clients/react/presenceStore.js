// presenceStore.js — the React-free half of `usePresence` (`@rollcall/react`): an external
// store (the shape React's `useSyncExternalStore` wants) over one channel of a
// `@rollcall/client` client.
//
//   const store = createPresenceStore(client, "room:lobby");
//   const stop = store.subscribe(() => console.log(store.getSnapshot().members));
//
// - The first subscriber joins the channel (unless the client is already in it); when the
//   last one goes, the store leaves it again — after `leaveDelayMs`, so React's StrictMode
//   (subscribe, unsubscribe, subscribe) does not leave and rejoin. Joins are counted per
//   client and channel: two stores of one channel share the membership.
// - `getSnapshot()` returns the same object until something changed (React compares by
//   identity), with members sorted as the broker sorts them (byte order of user id).
// - `setTyping()` sends `{typing: "1"}` with a TTL, at most once per `typingThrottleMs`;
//   the broker removes the key by itself (PROTOCOL 1.1 per-key TTL), so nobody has to say
//   "stopped typing". `setTyping(false)` removes it at once.
// - `status`: `idle` (no subscriber) → `joining` → `joined`; a join the broker refused goes to
//   `error` (with `error`), and after a backoff (1 s doubling to 30 s) to `retrying` while the
//   next attempt runs (→ `joined`, or `error` again). The client's own retries of a rejoin
//   (`RATE_LIMITED`, `UNAVAILABLE`, …) show as `retrying` too, and a rejoin it could not make as
//   `error`: the status is the roster's (`Roster.status`) while there is a roster.

/** The state key of the typing indicator. */
export const TYPING_KEY = "typing";

const EMPTY = Object.freeze([]);

/** Joined channels per client: channel key → how many stores hold it, and whether one joined it. */
const memberships = new WeakMap();

function membershipOf(client, key) {
  if (!memberships.has(client)) memberships.set(client, new Map());
  const table = memberships.get(client);
  if (!table.has(key)) table.set(key, { holders: 0, joinedByStore: false, joining: null, leaveTimer: null });
  return table.get(key);
}

/**
 * @typedef {object} PresenceMember
 * @property {string} userId
 * @property {Record<string, string>} state the member's full state (the typing key included)
 * @property {object | undefined} info the member's token `info` (protocol 1.1), if any
 * @property {boolean} typing whether the state has the typing key
 * @property {boolean} self whether this is the client's own user
 */

/**
 * @typedef {object} PresenceSnapshot
 * @property {readonly PresenceMember[]} members in byte order of user id
 * @property {number} occupancy as last reported by the broker
 * @property {"announce" | "interval" | null} mode null until the first reply
 * @property {readonly string[]} typing ids of the other members who are typing
 * @property {"idle" | "joining" | "joined" | "error" | "retrying"} status
 * @property {Error | null} error why the join failed (status `error`)
 */

/**
 * @typedef {object} PresenceStoreOptions
 * @property {"message" | "stream"} [channelType] default `message`
 * @property {Record<string, string>} [state] state to join with
 * @property {boolean} [join] join the channel on the first subscriber (default true)
 * @property {boolean} [leave] leave it after the last one, if a store joined it (default true)
 * @property {number} [leaveDelayMs] wait this long before leaving (default 100)
 * @property {number} [typingTtlSeconds] how long the typing key lives (default 3)
 * @property {number} [typingThrottleMs] at most one typing `setState` per this many ms (default 1000)
 */

/**
 * An external store of one channel's presence.
 * @param {import("@rollcall/client").RollcallClient} client a `@rollcall/client` client (connected or not: joins are kept offline)
 * @param {string} channel
 * @param {PresenceStoreOptions} [options]
 */
export function createPresenceStore(client, channel, options = {}) {
  const channelType = options.channelType ?? "message";
  const key = `${channelType}\u0000${channel}`;
  const typingTtlSeconds = options.typingTtlSeconds ?? 3;
  const typingThrottleMs = options.typingThrottleMs ?? 1000;
  const leaveDelayMs = options.leaveDelayMs ?? 100;
  const listeners = new Set();
  let snapshot = freeze({ members: EMPTY, occupancy: 0, mode: null, typing: EMPTY, status: "idle", error: null });
  let error = null; // why the store's last join was refused
  let retrying = false; // a join again after `error` is in flight
  let attempt = 0;
  let retryTimer = null;
  let active = false; // has subscribers
  let roster = null;
  let stopRoster = null;
  let stopClient = null;
  let lastTypingAt = -Infinity;

  /** Follows the client's roster of this channel (a leave and join makes a new one). */
  function attach() {
    const current = client.rosters.get(key) ?? null;
    if (current === roster) return;
    stopRoster?.();
    roster = current;
    const stops = roster ? [roster.on("change", update), roster.on("status", update)] : [];
    stopRoster = roster ? () => stops.forEach((stop) => stop()) : null;
  }

  /** The status: the roster's while there is one (the client knows best), else the store's. */
  function currentStatus() {
    if (roster) {
      const status = roster.status ?? "joined";
      return retrying && status === "joining" ? "retrying" : status;
    }
    if (error) return retrying ? "retrying" : "error";
    return active ? "joining" : "idle";
  }

  /** Rebuilds the snapshot and tells the listeners, if anything they can see changed. */
  function update() {
    attach();
    const next = build();
    if (sameSnapshot(next, snapshot)) return;
    snapshot = next;
    for (const listener of [...listeners]) listener();
  }

  function build() {
    const status = currentStatus();
    const shownError = status === "error" || status === "retrying" ? (roster?.error ?? error) : null;
    if (!roster) return freeze({ members: EMPTY, occupancy: 0, mode: null, typing: EMPTY, status, error: shownError });
    const members = roster.sortedUserIds().map((userId) => {
      const state = roster.members.get(userId) ?? {};
      return Object.freeze({ userId, state, info: roster.info?.get(userId), typing: Boolean(state[TYPING_KEY]), self: userId === client.userId });
    });
    const typing = members.filter((m) => m.typing && !m.self).map((m) => m.userId);
    return freeze({ members, occupancy: roster.occupancy, mode: roster.mode, typing, status, error: shownError });
  }

  async function acquire() {
    const membership = membershipOf(client, key);
    membership.holders += 1;
    clearTimeout(membership.leaveTimer);
    membership.leaveTimer = null;
    if (options.join === false) return;
    await joinOnce();
  }

  /** Joins (or waits for the join of another store of the channel); after a refusal, retries. */
  async function joinOnce() {
    const membership = membershipOf(client, key);
    if (!membership.joining) {
      if (client.rosters.has(key) && !error) return; // in it already (another store, or the app)
      membership.joinedByStore = true;
      membership.joining = client
        .join(channel, { channelType, ...(options.state ? { state: options.state } : {}) })
        .finally(() => (membership.joining = null));
    }
    update();
    try {
      await membership.joining;
      error = null;
      attempt = 0;
    } catch (joinError) {
      if (!active) return;
      error = joinError;
      if (joinError.code !== "DISCONNECTED") scheduleRetry(); // DISCONNECTED: left, or the client ended
    } finally {
      retrying = false;
      update();
    }
  }

  /** After a refused join: `error` now, `retrying` (a join again) after the backoff. */
  function scheduleRetry() {
    clearTimeout(retryTimer);
    const delayMs = Math.min(30_000, 1000 * 2 ** attempt++);
    retryTimer = setTimeout(() => {
      retryTimer = null;
      if (!active) return;
      retrying = true;
      joinOnce();
    }, delayMs);
    retryTimer.unref?.();
  }

  function release() {
    const membership = membershipOf(client, key);
    membership.holders -= 1;
    if (membership.holders > 0 || !membership.joinedByStore || options.leave === false) return;
    membership.leaveTimer = setTimeout(() => {
      membership.leaveTimer = null;
      if (membership.holders > 0) return;
      membership.joinedByStore = false;
      client.leave(channel, channelType).catch(() => {});
    }, leaveDelayMs);
  }

  return {
    /**
     * Adds a listener (called after each change); the first one joins the channel.
     * @param {() => void} listener
     * @returns {() => void} removes it; the last removal leaves the channel (after `leaveDelayMs`)
     */
    subscribe(listener) {
      listeners.add(listener);
      if (listeners.size === 1) {
        active = true;
        stopClient = [client.on("connection", update), client.on("login", update), client.on("presence", update)];
        attach();
        acquire();
        update();
      }
      return () => {
        if (!listeners.delete(listener) || listeners.size > 0) return;
        active = false;
        clearTimeout(retryTimer);
        retryTimer = null;
        retrying = false;
        error = null;
        for (const stop of stopClient ?? []) stop();
        stopClient = null;
        stopRoster?.();
        stopRoster = null;
        roster = null;
        release();
      };
    },

    /** @returns {PresenceSnapshot} the current snapshot (same object until something changes) */
    getSnapshot() {
      return snapshot;
    },

    /**
     * Merges keys into this user's state in the channel.
     * @param {Record<string, string>} state
     * @param {{ttlSeconds?: number}} [stateOptions]
     */
    setState(state, stateOptions = {}) {
      return client.setState(channel, state, channelType, stateOptions);
    },

    /**
     * Says "typing" (throttled; the key expires by itself) or, with `false`, stops at once.
     * Best effort, for event handlers: the promise never rejects (it resolves with the state
     * result, or null when the request failed).
     * @param {boolean} [typing]
     * @returns {Promise<unknown> | null} the request, or null when throttled
     */
    setTyping(typing = true) {
      if (!typing) {
        lastTypingAt = -Infinity;
        return client.removeState(channel, [TYPING_KEY], channelType).catch(() => null);
      }
      const now = Date.now();
      if (now - lastTypingAt < typingThrottleMs) return null;
      lastTypingAt = now;
      return client.setState(channel, { [TYPING_KEY]: "1" }, channelType, { ttlSeconds: typingTtlSeconds }).catch(() => {
        lastTypingAt = -Infinity; // the next keystroke tries again
        return null;
      });
    },
  };
}

function freeze(snapshot) {
  return Object.freeze(snapshot);
}

/** Whether two snapshots show the same thing (so the old object can stay). */
function sameSnapshot(a, b) {
  if (a.occupancy !== b.occupancy || a.mode !== b.mode || a.status !== b.status || a.error !== b.error) return false;
  if (a.members.length !== b.members.length || a.typing.length !== b.typing.length) return false;
  for (let i = 0; i < a.members.length; i++) {
    const x = a.members[i];
    const y = b.members[i];
    if (x.userId !== y.userId || x.info !== y.info || !sameState(x.state, y.state)) return false;
  }
  return true;
}

function sameState(a, b) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
