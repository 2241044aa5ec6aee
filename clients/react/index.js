// @rollcall/react — React bindings for `@rollcall/client`: a provider that owns (or is given) a
// client, and hooks for a channel's presence, users' status and the connection state.
// Plain ES module, no JSX, no build step; React (18+) comes from your app.
//
//   import { RollcallProvider, usePresence, useUserStatus, useConnectionState } from "@rollcall/react";
//   h(RollcallProvider, { url: "ws://127.0.0.1:8080/v1", options: { userId: "alice" } }, h(Room));
//   function Room() {
//     const { members, status } = usePresence("room:lobby");      // idle → joining → joined | error → retrying
//     const { bob } = useUserStatus(["bob"]);                      // bob's status record, or undefined
//     const connection = useConnectionState();                     // connecting | online | reconnecting | closed
//   }
//
// StrictMode: the provider's client is created in an effect and closed by its cleanup, so the
// double mount closes the first client (no leaked connection); stores and status subscriptions
// are released after a short delay, so mount → unmount → mount does not leave and rejoin.

import { createContext, createElement, useCallback, useContext, useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { RollcallClient } from "@rollcall/client";

import { createPresenceStore } from "./presenceStore.js";

export { createPresenceStore, TYPING_KEY } from "./presenceStore.js";

const RollcallContext = createContext(null);

/**
 * Gives its children a client: `client` when given (the app owns it), else one it creates from
 * `url` and `options` (opened at mount, closed at unmount; made again when `url` or the
 * options' JSON change). The first connect is retried by the client; `open()`'s failure (the
 * client ended) shows in `useConnectionState()` as `closed`.
 * @param {{client?: RollcallClient, url?: string | string[], options?: object, children?: any}} props
 */
export function RollcallProvider({ client, url, options, children }) {
  const [owned, setOwned] = useState(null);
  const latest = useRef(options);
  latest.current = options;
  const identity = client ? null : JSON.stringify([url, options ?? {}]);
  useEffect(() => {
    if (identity === null) return undefined;
    const created = new RollcallClient(url, latest.current);
    setOwned(created);
    created.open().catch(() => {
      /* the connection state says closed */
    });
    return () => {
      created.close();
      setOwned((current) => (current === created ? null : current));
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [identity]);
  return createElement(RollcallContext.Provider, { value: client ?? owned }, children);
}

/** The provider's client (null before its effect ran, or outside a provider). */
export function useRollcallClient() {
  return useContext(RollcallContext);
}

/**
 * The client's connection state: `idle` (no client yet), `connecting`, `online`,
 * `reconnecting` or `closed`.
 * @returns {"idle" | "connecting" | "online" | "reconnecting" | "closed"}
 */
export function useConnectionState() {
  const client = useRollcallClient();
  const subscribe = useCallback((onChange) => (client ? client.on("connection", onChange) : () => {}), [client]);
  const getSnapshot = useCallback(() => client?.state ?? "idle", [client]);
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}

/**
 * Joins `channel` while the component is mounted (unless the client is in it already) and
 * returns its live presence: `members` (byte order of user id, `{userId, state, info, typing,
 * self}`), `occupancy`, `mode`, `typing` (other members typing), `status` (`idle` → `joining`
 * → `joined`, or `error` → `retrying`), `error`, `setState`, `setTyping`.
 * @param {string} channel
 * @param {import("./presenceStore.js").PresenceStoreOptions} [options]
 */
export function usePresence(channel, options = {}) {
  const client = useRollcallClient();
  const { channelType = "message", join, leave, leaveDelayMs, typingTtlSeconds, typingThrottleMs } = options;
  // The join state only matters for the first join: kept out of the dependencies on purpose.
  const store = useMemo(
    () => (client ? createPresenceStore(client, channel, { ...options, channelType }) : null),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [client, channel, channelType, join, leave, leaveDelayMs, typingTtlSeconds, typingThrottleMs],
  );
  const subscribe = useCallback((onChange) => (store ? store.subscribe(onChange) : () => {}), [store]);
  const getSnapshot = useCallback(() => (store ? store.getSnapshot() : IDLE), [store]);
  const snapshot = useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
  const setState = useCallback(
    (state, stateOptions) => (store ? store.setState(state, stateOptions) : Promise.reject(new Error("usePresence: no client"))),
    [store],
  );
  const setTyping = useCallback((typing) => (store ? store.setTyping(typing) : null), [store]);
  return { ...snapshot, setState, setTyping };
}

/** The snapshot without a client. */
const IDLE = Object.freeze({ members: Object.freeze([]), occupancy: 0, mode: null, typing: Object.freeze([]), status: "idle", error: null });

/** Status subscriptions held per client: userId → {holders, timer}. */
const followed = new WeakMap();

/** How long a status subscription outlives its last component (StrictMode's remount). */
const RELEASE_DELAY_MS = 100;

function holdStatuses(client, userIds) {
  if (!followed.has(client)) followed.set(client, new Map());
  const table = followed.get(client);
  const fresh = [];
  for (const userId of userIds) {
    const entry = table.get(userId) ?? { holders: 0, timer: null };
    clearTimeout(entry.timer);
    entry.timer = null;
    if (entry.holders === 0 && !client.subscriptions.has(userId)) fresh.push(userId);
    entry.holders += 1;
    table.set(userId, entry);
  }
  // Kept by the client while offline, sent after the next login.
  for (let i = 0; i < fresh.length; i += 100) client.subscribe(fresh.slice(i, i + 100)).catch(() => {});
}

function releaseStatuses(client, userIds) {
  const table = followed.get(client);
  for (const userId of userIds) {
    const entry = table?.get(userId);
    if (!entry) continue;
    entry.holders -= 1;
    if (entry.holders > 0) continue;
    entry.timer = setTimeout(() => {
      if (entry.holders > 0 || table.get(userId) !== entry) return;
      table.delete(userId);
      if (client.state !== "closed") client.unsubscribe([userId]).catch(() => {});
    }, RELEASE_DELAY_MS);
  }
}

/**
 * Follows users' status while mounted (`subscribeUserStatus`, released when the last component
 * that follows a user unmounts) and returns their records: `{[userId]: StatusRecord | undefined}`
 * (undefined until the first record arrives). The same object until a record changes.
 * @param {readonly string[]} userIds
 * @returns {Readonly<Record<string, object | undefined>>}
 */
export function useUserStatus(userIds) {
  const client = useRollcallClient();
  const key = [...new Set(userIds)].sort().join("\n");
  useEffect(() => {
    if (!client || !key) return undefined;
    const ids = key.split("\n");
    holdStatuses(client, ids);
    return () => releaseStatuses(client, ids);
  }, [client, key]);
  const cache = useRef(EMPTY_STATUSES);
  const subscribe = useCallback((onChange) => (client ? client.on("userStatus", onChange) : () => {}), [client]);
  const getSnapshot = useCallback(() => {
    const ids = key ? key.split("\n") : [];
    const previous = cache.current;
    const same = Object.keys(previous).length === ids.length && ids.every((id) => id in previous && previous[id] === client?.statuses.get(id));
    if (same) return previous;
    cache.current = Object.freeze(Object.fromEntries(ids.map((id) => [id, client?.statuses.get(id)])));
    return cache.current;
  }, [client, key]);
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}

const EMPTY_STATUSES = Object.freeze({});
