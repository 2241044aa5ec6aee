// Types of @rollcall/react (index.js).

// Without a dependency on React's own types (@types/react): children and the element are opaque here.
type ReactNode = unknown;
type ReactElement = unknown;
import type { ClientOptions, ConnectionState, RollcallClient, State, StatusRecord } from "@rollcall/client";
import type { PresenceSnapshot, PresenceStoreOptions } from "./presenceStore.js";

export { createPresenceStore, TYPING_KEY } from "./presenceStore.js";
export type { PresenceMember, PresenceSnapshot, PresenceStatus, PresenceStore, PresenceStoreOptions } from "./presenceStore.js";

export interface RollcallProviderProps {
  /** A client the app owns; else the provider creates one from `url` and `options`. */
  client?: RollcallClient;
  url?: string | readonly string[];
  options?: ClientOptions;
  children?: ReactNode;
}

/** Gives its children a client (created at mount and closed at unmount when not given). */
export function RollcallProvider(props: RollcallProviderProps): ReactElement;

/** The provider's client (null before it exists). */
export function useRollcallClient(): RollcallClient | null;

/** The client's connection state; `idle` without a client. */
export function useConnectionState(): ConnectionState;

export interface PresenceApi extends PresenceSnapshot {
  setState(state: State, options?: { ttlSeconds?: number }): Promise<unknown>;
  setTyping(typing?: boolean): Promise<unknown> | null;
}

/** A channel's live presence while mounted (joins it unless the client is in it already). */
export function usePresence(channel: string, options?: PresenceStoreOptions): PresenceApi;

/** Users' status records while mounted (subscribed; undefined until the first record). */
export function useUserStatus(userIds: readonly string[]): Readonly<Record<string, StatusRecord | undefined>>;
