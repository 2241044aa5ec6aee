// Types of presenceStore.js (@rollcall/react/presenceStore): the React-free store under usePresence.

import type { RollcallClient, State, PresenceMode, UserInfo, RollcallError } from "@rollcall/client";

/** The state key of the typing indicator. */
export const TYPING_KEY: "typing";

/** A channel's status as the store shows it: idle → joining → joined, or error → retrying. */
export type PresenceStatus = "idle" | "joining" | "joined" | "error" | "retrying";

export interface PresenceMember {
  userId: string;
  /** The member's full state (the typing key included). */
  state: State;
  /** The member's token `info` (protocol 1.1), if any. */
  info: UserInfo | undefined;
  /** Whether the state has the typing key. */
  typing: boolean;
  /** Whether this is the client's own user. */
  self: boolean;
}

export interface PresenceSnapshot {
  /** In byte order of user id (the broker's order). */
  members: readonly PresenceMember[];
  occupancy: number;
  mode: PresenceMode | null;
  /** Ids of the other members who are typing. */
  typing: readonly string[];
  status: PresenceStatus;
  /** Why the join failed (`error`, `retrying`), else null. */
  error: RollcallError | Error | null;
}

export interface PresenceStoreOptions {
  /** Default `message`. */
  channelType?: "message" | "stream";
  /** State to join with. */
  state?: State;
  /** Join the channel on the first subscriber (default true). */
  join?: boolean;
  /** Leave it after the last one, if a store joined it (default true). */
  leave?: boolean;
  /** Wait this long before leaving (default 100 ms: StrictMode's remount does not leave). */
  leaveDelayMs?: number;
  /** How long the typing key lives (default 3 s). */
  typingTtlSeconds?: number;
  /** At most one typing `setState` per this many ms (default 1000). */
  typingThrottleMs?: number;
}

export interface PresenceStore {
  /** Adds a listener; the first one joins the channel; returns a function that removes it. */
  subscribe(listener: () => void): () => void;
  /** The current snapshot (the same object until something changes). */
  getSnapshot(): PresenceSnapshot;
  setState(state: State, options?: { ttlSeconds?: number }): Promise<unknown>;
  /** Throttled "typing" (expires by itself); `false` stops at once. Never rejects. */
  setTyping(typing?: boolean): Promise<unknown> | null;
}

export function createPresenceStore(client: RollcallClient, channel: string, options?: PresenceStoreOptions): PresenceStore;
