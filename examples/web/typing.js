// Typing indicators for the demo: a throttled notifier for the message box and the helpers
// the roster uses. The broker removes the key by itself (PROTOCOL 1.1 per-key TTL), so nobody
// ever has to send "stopped typing".

/** The state key that says "this member is typing". */
export const TYPING_KEY = "typing";

/** Seconds the broker keeps the key after the last keystroke burst. */
export const TYPING_TTL_SECONDS = 3;

/** At most one `setState` per this many milliseconds while someone keeps typing. */
export const TYPING_THROTTLE_MS = 1000;

/** Whether a member's state says they are typing. */
export function isTyping(state) {
  return Boolean(state && state[TYPING_KEY]);
}

/** A member's state without the typing key (what the chips show). */
export function withoutTyping(state) {
  const { [TYPING_KEY]: _typing, ...rest } = state ?? {};
  return rest;
}

/**
 * Returns `notify(channel, channelType)`: call it on every input event; it sets
 * `{typing: "1"}` with a TTL at most once per `TYPING_THROTTLE_MS` per channel, and `reset`
 * forgets the throttle (after sending a message, say).
 * @param {import("./rollcall.js").RollcallClient} client
 * @param {() => number} [now] clock, for tests
 */
export function typingNotifier(client, now = () => Date.now()) {
  const lastSent = new Map();
  const notify = (channel, channelType = "message") => {
    const key = `${channelType}\u0000${channel}`;
    const at = now();
    if (lastSent.has(key) && at - lastSent.get(key) < TYPING_THROTTLE_MS) return null;
    lastSent.set(key, at);
    return client
      .setState(channel, { [TYPING_KEY]: "1" }, channelType, { ttlSeconds: TYPING_TTL_SECONDS })
      .catch(() => lastSent.delete(key)); // try again at the next keystroke
  };
  notify.reset = (channel, channelType = "message") => lastSent.delete(`${channelType}\u0000${channel}`);
  return notify;
}
