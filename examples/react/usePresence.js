// usePresence.js — a React hook for one channel's live roster, on a rollcall.js client.
// Plain ES module, no JSX, no build step needed to read it; React comes from your app.
//
//   import { usePresence } from "./usePresence.js";
//
//   function Room({ client }) {
//     const { members, occupancy, mode, typing, setTyping } = usePresence(client, "room:lobby");
//     return h("div", null,
//       h("p", null, `${occupancy} here (${mode ?? "…"})`),
//       h("ul", null, members.map((m) => h("li", { key: m.userId }, m.userId, m.typing ? " typing…" : ""))),
//       h("input", { onInput: () => setTyping() }));
//   }
//
// The component re-renders on every change of the roster (snapshot, join, leave, timeout,
// state change, interval batch, reconnect). The store logic lives in presenceStore.js.

import { useCallback, useMemo, useSyncExternalStore } from "react";

import { createPresenceStore } from "./presenceStore.js";

/**
 * Joins `channel` while the component is mounted (unless the client is already in it) and
 * returns its live presence.
 *
 * @param {import("../../clients/js/rollcall.js").RollcallClient | null | undefined} client a connected
 *   rollcall.js client (null while logging in: the hook returns an empty roster)
 * @param {string} channel
 * @param {import("./presenceStore.js").PresenceStoreOptions} [options] `channelType`, `state`
 *   to join with, `join`/`leave` (default true), `typingTtlSeconds` (3), `typingThrottleMs` (1000)
 * @returns {{
 *   members: readonly import("./presenceStore.js").PresenceMember[],
 *   occupancy: number,
 *   mode: "announce" | "interval" | null,
 *   typing: readonly string[],
 *   status: "idle" | "joining" | "joined" | "error",
 *   error: Error | null,
 *   setState: (state: Record<string, string>, options?: {ttlSeconds?: number}) => Promise<unknown>,
 *   setTyping: (typing?: boolean) => Promise<unknown> | null,
 * }} `members` in byte order of user id (each `{userId, state, info, typing, self}`),
 *   `typing` the ids of the *other* members typing now; `setState` merges keys into this
 *   user's state; `setTyping()` on each keystroke (throttled, expires by itself),
 *   `setTyping(false)` after sending.
 */
export function usePresence(client, channel, options = {}) {
  const { channelType = "message", join, leave, typingTtlSeconds, typingThrottleMs } = options;
  // The join state only matters for the first join: kept out of the dependencies on purpose.
  const store = useMemo(
    () => (client ? createPresenceStore(client, channel, { ...options, channelType }) : null),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [client, channel, channelType, join, leave, typingTtlSeconds, typingThrottleMs],
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
