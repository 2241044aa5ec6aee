// Type declarations for rollcall.js — the dependency-free client of the Rollcall wire
// protocol v1.1 (/work/shared/PROTOCOL.md; the project's docs/protocol.md).
//
// Use from TypeScript (`import { connect } from "./rollcall.js"` picks this file up), or from
// plain JavaScript with `// @ts-check` and JSDoc:
//
//   /** @typedef {import("./rollcall.js").PresenceEvent} PresenceEvent */

// ---- basic names -----------------------------------------------------------------------

/** A channel's type: `message` (the default) or `stream` (publishing needs membership). */
export type ChannelType = "message" | "stream";

/** A login's platform (PROTOCOL §3). rollcall.js sends `web` unless told otherwise. */
export type Platform = "web" | "ios" | "android" | "macos" | "windows" | "linux" | "cli" | "other";

/** A channel's presence mode (PROTOCOL §4). */
export type PresenceMode = "announce" | "interval";

/** A member's state in a channel: string keys to string values. */
export type State = Record<string, string>;

/** The `info` object a token vouches for (PROTOCOL 1.1 §3): display name, avatar, role… */
export type UserInfo = Record<string, unknown>;

/** Any JSON value (a published `message`). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A channel as the broker lists it. */
export interface ChannelRef {
  channel: string;
  channelType: ChannelType;
}

// ---- errors and close codes ------------------------------------------------------------

/** Every error code of PROTOCOL §7 (1.1 adds `UNAVAILABLE`). */
export type ErrorCode =
  | "INVALID_JSON"
  | "INVALID_REQUEST"
  | "UNKNOWN_OP"
  | "INVALID_ARGUMENT"
  | "NOT_LOGGED_IN"
  | "ALREADY_LOGGED_IN"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_IN_CHANNEL"
  | "USER_NOT_PRESENT"
  | "TOO_MANY_KEYS"
  | "KEY_TOO_LONG"
  | "VALUE_TOO_LONG"
  | "STATE_TOO_LARGE"
  | "TOO_MANY_PENDING_STATES"
  | "TOO_MANY_CHANNELS"
  | "TOO_MANY_USERS"
  | "MESSAGE_TOO_LARGE"
  | "CUSTOM_STATUS_TOO_LONG"
  | "CANNOT_SUBSCRIBE_SELF"
  | "TARGET_SUBSCRIBER_LIMIT"
  | "RATE_LIMITED"
  | "INTERNAL"
  | "UNAVAILABLE";

/**
 * Codes of failures rollcall.js reports itself: `DISCONNECTED` (no connection, or it closed
 * before the reply), `TIMEOUT` (no reply within the request's timeout, protocol 1.2 §3).
 */
export type LocalErrorCode = "DISCONNECTED" | "TIMEOUT";

/** Every code a `RollcallError` may carry, in the order of `ERROR_CODES`. */
export const ERROR_CODES: readonly (ErrorCode | LocalErrorCode)[];

/** The error object of an error reply. */
export interface ErrorObject {
  code: ErrorCode;
  message: string;
  /** With `RATE_LIMITED` and `UNAVAILABLE`: milliseconds until a retry may pass. */
  retryAfterMs?: number;
  [member: string]: unknown;
}

/** An error reply from the broker (`code` from §7), or a local failure (`DISCONNECTED`, `TIMEOUT`). */
export class RollcallError extends Error {
  constructor(code: ErrorCode | LocalErrorCode, message: string, details?: Partial<ErrorObject>);
  readonly name: "RollcallError";
  /** The stable code; the message is `"CODE: human text"`. */
  code: ErrorCode | LocalErrorCode;
  /** Milliseconds to wait, for `RATE_LIMITED` and `UNAVAILABLE`. */
  retryAfterMs: number | undefined;
  /** The error object as the broker sent it (`{}` for local failures built without one). */
  details: Partial<ErrorObject>;
}

/** A per-id failure inside a batch op's result (`getUserStatus`, `subscribeUserStatus`, …). */
export interface FailedId {
  userId: string;
  code: ErrorCode;
}

/** WebSocket close codes the broker uses (PROTOCOL §7). */
export const CloseCode: Readonly<{
  /** `logout` */
  LOGOUT: 1000;
  /** broker shutdown (SIGTERM/SIGINT): reconnect */
  SHUTDOWN: 1001;
  /** a binary frame was sent */
  BINARY_FRAME: 1003;
  /** invalid UTF-8 */
  BAD_UTF8: 1007;
  /** frame over `limits.maxFrameBytes` */
  FRAME_TOO_BIG: 1009;
  /** cluster data lost: log in again (1.1, §9) */
  SERVICE_RESTART: 1012;
  /** outbound queue over `limits.maxOutboundBytes` (held, resumable) */
  SLOW_CONSUMER: 1013;
  /** bad token, or the token expired */
  UNAUTHORIZED: 4401;
  /** the server API's `disconnectUser` (1.1, §10) */
  DISCONNECTED_BY_SERVER: 4403;
  /** no `login` within `limits.loginTimeoutSeconds` */
  LOGIN_TIMEOUT: 4408;
  /** more than `limits.maxSessionsPerUser` sessions: the oldest is closed */
  SESSION_LIMIT: 4409;
}>;

/** One of the close codes in `CloseCode`, or any other code a WebSocket may report (1006…). */
export type CloseCodeValue = (typeof CloseCode)[keyof typeof CloseCode] | number;

// ---- results ---------------------------------------------------------------------------

/** The broker's limits, from the login result (docs/protocol.md §11, decision 6). */
export interface Limits {
  maxFrameBytes: number;
  maxMessageBytes: number;
  maxBatchBytes: number;
  maxChannelsPerSession: number;
  maxSessionsPerUser: number;
  requestsPerSecond: number;
  requestBurst: number;
  maxStateKeys: number;
  maxStateKeyBytes: number;
  maxStateValueBytes: number;
  maxStateTotalBytes: number;
  maxPendingChannels: number;
  customStatusMaxBytes: number;
  /** (1.2) seconds of silence after which a client sends `ping` */
  heartbeatIntervalSeconds: number;
  /** (1.2) seconds of silence after which a client treats the link as lost */
  heartbeatTimeoutSeconds: number;
  [limit: string]: number;
}

/** The result of `login` (also after each reconnect). */
export interface LoginResult {
  userId: string;
  platform: Platform;
  /** Opaque; stays the same across resumes. */
  sessionId: string;
  /** Single use; rollcall.js keeps the latest to resume after a drop. */
  resumeToken: string;
  serverTime: number;
  /** True when a held session was taken over (channels, states and memberships kept). */
  resumed: boolean;
  /** The effective hold after a drop, in seconds (after the 5–300 clamp). */
  presenceTimeout?: number;
  limits: Limits;
  /** On a resume: the channels the session is in. */
  channels?: ChannelRef[];
  /** On a resume (1.1): held `message` events that did not fit `limits.heldMessageBytes`. */
  messagesDropped?: number;
  /** The token's `exp` in ms; `null` in auth mode `none` (1.1). */
  expiresAt?: number | null;
}

/** The result of `join`. */
export interface JoinResult {
  occupancy: number;
  mode: PresenceMode;
}

/** The result of `setState` and `removeState`: the full merged state. */
export interface StateResult {
  state: State;
  /** True when the user is not a member: the state is held and applied at the join. */
  pending?: boolean;
}

/** The result of `getState`. */
export interface GetStateResult {
  userId: string;
  state: State;
}

/** One entry of `getOnlineUsers`. */
export interface OnlineUser {
  userId: string;
  /** With `includeState: true`. */
  state?: State;
  /** The member's token `info` (1.1), when it has one. */
  info?: UserInfo;
}

/** One page of `getOnlineUsers`. */
export interface OnlineUsersPage {
  totalOccupancy: number;
  /** The channel's presence `seq` when the page was read, 0 for an empty channel (1.1). */
  seq?: number;
  users: OnlineUser[];
  /** Pass as `page` for the next page; `null` on the last one. */
  nextPage: string | null;
}

/** Options of `getOnlineUsers`. */
export interface GetOnlineUsersOptions {
  channelType?: ChannelType;
  /** Default `true` in rollcall.js (the broker's default is `false`). */
  includeState?: boolean;
  /** `false`: only `totalOccupancy` (then `includeState` must be `false`). */
  includeUserId?: boolean;
  /** A `nextPage` from the previous page. */
  page?: string;
  /** 1–1000, default 100. */
  pageSize?: number;
}

/** The result of `getUserChannels`. */
export interface UserChannels {
  totalChannel: number;
  channels: ChannelRef[];
}

/** A user's status `online`, `offline` (no session, no logout) or `loggedOut` (PROTOCOL §6). */
export type UserStatusValue = "online" | "offline" | "loggedOut";

/** A user-status record (PROTOCOL §6). */
export interface StatusRecord {
  userId: string;
  status: UserStatusValue;
  customStatus: string | null;
  /** Platforms of the user's live and held sessions. */
  platforms: Platform[];
  lastUpdateTime: number;
  lastOnlineStatusUpdateTime: number;
  lastCustomStatusUpdateTime: number;
}

/** The result of `getUserStatus`. */
export interface UserStatusResult {
  statuses: StatusRecord[];
  failed: FailedId[];
}

/** The result of `subscribe` (`subscribeUserStatus`). */
export interface SubscribeResult {
  /** Current records of the users now followed. */
  statuses: StatusRecord[];
  /** E.g. `CANNOT_SUBSCRIBE_SELF`, `TARGET_SUBSCRIBER_LIMIT`, `INVALID_ARGUMENT`. */
  failed: FailedId[];
}

/** One subscription of this user. */
export interface Subscription {
  userId: string;
  expiresAt: number;
  status: StatusRecord;
}

/** One page of `getSubscriptions`. */
export interface SubscriptionsPage {
  subscriptions: Subscription[];
  nextPage: string | null;
  failed?: FailedId[];
}

// ---- events ----------------------------------------------------------------------------

/** Members every presence event carries. */
export interface PresenceEventBase {
  event: "presence";
  channel: string;
  channelType: ChannelType;
  /** Member users after the change (snapshot: members it shows). */
  occupancy: number;
  mode: PresenceMode;
  /** The channel's event counter: +1 per event it emits (PROTOCOL §4). */
  seq: number;
  timestamp: number;
}

/** A user joined (was not a member before). */
export interface JoinEvent extends PresenceEventBase {
  type: "join";
  publisher: string;
  state: State;
  /** The joiner's token `info` (1.1). */
  info?: UserInfo;
}

/** A user's last session left, logged out or closed. */
export interface LeaveEvent extends PresenceEventBase {
  type: "leave";
  publisher: string;
}

/** A held session's hold expired (its connection had dropped). */
export interface TimeoutEvent extends PresenceEventBase {
  type: "timeout";
  publisher: string;
}

/** A member's state changed (also when keys set with `ttlSeconds` expire); `state` is the full state. */
export interface StateChangedEvent extends PresenceEventBase {
  type: "stateChanged";
  publisher: string;
  state: State;
}

/** Every member (the receiver included) after a join or resume with `presence: true`. */
export interface SnapshotEvent extends PresenceEventBase {
  type: "snapshot";
  snapshot: { userId: string; state: State; info?: UserInfo }[];
  /** Over `presence.snapshotMaxMembers`: the rest comes from `getOnlineUsers` (rollcall.js pages it). */
  truncated?: boolean;
  nextPage?: string;
}

/** The net change of one interval (interval mode); apply joins, then leaves/timeouts, then states. */
export interface IntervalEvent extends PresenceEventBase {
  type: "interval";
  interval: {
    join: string[];
    leave: string[];
    timeout: string[];
    stateChanged: { userId: string; state: State }[];
    /** Token `info` of users in `join` that have one (1.1). */
    joinInfo?: Record<string, UserInfo>;
  };
}

/** Any presence event. */
export type PresenceEvent = JoinEvent | LeaveEvent | TimeoutEvent | StateChangedEvent | SnapshotEvent | IntervalEvent;

/** The `type` of a presence event. */
export type PresenceEventType = PresenceEvent["type"];

/** A published message (to sessions that joined with `messages: true`, not the publisher's). */
export interface MessageEvent {
  event: "message";
  channel: string;
  channelType: ChannelType;
  publisher: string;
  message: Json;
  timestamp: number;
}

/** Status records that changed (subscribed users, and this user's own other sessions). */
export interface UserStatusEvent {
  event: "userStatus";
  statuses: StatusRecord[];
}

/** This user's subscriptions changed from another session (or the cap dropped some). */
export interface SubscriptionsEvent {
  event: "subscriptions";
  added: string[];
  removed: string[];
}

/** Session notices (1.1): the token expires soon — call `refresh`. */
export interface SessionEvent {
  event: "session";
  type: "refreshRequired";
  /** The token's expiry (ms). */
  expiresAt: number;
}

/** Any event the broker sends. */
export type BrokerEvent = PresenceEvent | MessageEvent | UserStatusEvent | SubscriptionsEvent | SessionEvent;

// ---- the roster model ------------------------------------------------------------------

/** One edit a roster made. */
export type RosterChange =
  | { kind: "join"; userId: string; state: State }
  | { kind: "leave"; userId: string }
  | { kind: "timeout"; userId: string }
  | { kind: "state"; userId: string; state: State };

/** What a roster's `change` event carries. */
export interface RosterChangeDetail {
  /**
   * The presence event type, `page` (a page completing a truncated snapshot), `self` (own state
   * from a reply, or an own key's TTL) or `resync` (a listing read after a `seq` gap; `changes`
   * are the differences it made).
   */
  type: PresenceEventType | "page" | "self" | "resync";
  changes: RosterChange[];
  /** The presence event, `null` for `page`, `self` and `resync`. */
  event: PresenceEvent | null;
}

/** A channel's membership as the client knows it (`Roster.status`). */
export type ChannelStatus = "joining" | "joined" | "retrying" | "error";

/** Events of a `Roster`. */
export interface RosterEvents {
  change: RosterChangeDetail;
  /** `status` changed; with `retrying`, the delay before the next attempt. */
  status: { status: ChannelStatus; error: RollcallError | Error | null; retryInMs?: number };
  /** A `seq` gap: events were lost; the client reads a listing (`resync` change follows). */
  gap: { expectedSeq: number; receivedSeq: number };
}

/** The listener registry of rollcall.js's objects. */
declare class Emitter<Events> {
  /** Calls `handler` for every event of `type`; returns a function that stops it. */
  on<K extends keyof Events & string>(type: K, handler: (detail: Events[K]) => void): () => void;
  /** @protected */
  emit<K extends keyof Events & string>(type: K, detail: Events[K]): void;
}

/**
 * The members of one channel and their states, kept exactly from the snapshot and every
 * presence event in order (PROTOCOL §4's invariant: once quiet it equals `getOnlineUsers`).
 */
export class Roster extends Emitter<RosterEvents> {
  constructor(channel: string, channelType: ChannelType, selfUserId: string);
  readonly channel: string;
  readonly channelType: ChannelType;
  readonly selfUserId: string;
  /** userId → state, this user included. */
  members: Map<string, State>;
  /** userId → token `info` (1.1) for members that have one. */
  info: Map<string, UserInfo>;
  /** The `seq` of the last event applied; `null` until the first snapshot. */
  seq: number | null;
  mode: PresenceMode | null;
  /** Occupancy as last reported by the broker. */
  occupancy: number;
  /** True while a truncated snapshot is being completed page by page. */
  loading: boolean;
  /** The `join` reply that created or refreshed this roster. */
  joinResult?: JoinResult;
  /**
   * (1.2) `joining` until the join (offline: the reconnect that sends it) succeeds, `joined`,
   * `retrying` after a join failed with `RATE_LIMITED`, `UNAVAILABLE`, `TIMEOUT` or `INTERNAL`,
   * `error` after a join again (reconnect) was refused: the roster is kept, tried again after
   * the next login.
   */
  status: ChannelStatus;
  /** Why the last join failed (`retrying`, `error`), else null. */
  error: RollcallError | Error | null;
  /** True after a `seq` gap until a listing or a snapshot replaces the roster. */
  readonly resyncing: boolean;
  /** Lets the next events skip `n` (default 1) more `seq` values: own changes the broker does not echo. */
  allowSkippedSeq(n?: number): void;
  /** Sets `status` and `error` (the client does), emitting `status` when they changed. */
  setStatus(status: ChannelStatus, error?: RollcallError | Error | null, retryInMs?: number): void;
  /** After a gap: replaces the members with a complete listing at `seq`, then applies the events since; false when ignored. */
  applyListing(users: OnlineUser[], seq: number): boolean;
  /** Member ids in byte order of their UTF-8 encoding (the broker's order). */
  sortedUserIds(): string[];
  /** Applies one presence event of this channel; false when ignored (stale) or kept until the snapshot. */
  apply(event: PresenceEvent): boolean;
  /** Adds one `getOnlineUsers` page (with states) completing a truncated snapshot. */
  applyPage(users: OnlineUser[]): void;
  /** Records this user's own full state (from a reply). */
  applySelfState(state: State): void;
}

/** The key rollcall.js files a channel under in `client.rosters`: `channelType + "\u0000" + channel`. */
export function channelKey(channel: string, channelType?: ChannelType): string;

// ---- the client ------------------------------------------------------------------------

/** Reconnect delays: attempt n waits a random time in [c/2, c], c = min(maxMs, initialMs · factorⁿ). */
export interface Backoff {
  /** Default 500. */
  initialMs?: number;
  /** Default 15000. */
  maxMs?: number;
  /** Default 2. */
  factor?: number;
}

/** Options of `connect` / `new RollcallClient`. */
export interface ClientOptions {
  userId: string;
  /** Default `web`. */
  platform?: Platform;
  /** HS256 JWT when the broker runs with `auth.mode: "jwt"` (`refresh` replaces it). */
  token?: string;
  /**
   * (1.1, jwt mode) Returns a fresh token for this user, at once or as a promise. Called for
   * every login (the first one only when `token` is not given), on the broker's
   * `refreshRequired` notice (the client then sends `refresh` by itself), and once more when a
   * reconnect is refused with `UNAUTHORIZED` or the broker closes with 4401 (token expired),
   * before the client gives up. A rejection on a reconnect counts as a failed attempt.
   */
  getToken?: () => string | Promise<string>;
  /** Set at the first login. */
  customStatus?: string;
  /** Seconds the broker holds the session after a drop (5–300). */
  presenceTimeout?: number;
  backoff?: Backoff;
  /** Reconnect after a drop (default true). */
  reconnect?: boolean;
  /**
   * After a drop, how long (ms) the client insists on resuming: a reconnect's login that
   * answers `resumed: false` within this window is logged out again (it joined nothing, so
   * nobody saw it), the resume token of the held session is kept, and the next URL is tried
   * (the backoff goes on, its last delay cut to end with the window). After the window a new
   * session is accepted and the channels are joined again. Default 5000 with several URLs (a
   * node killed abruptly keeps its sessions live, not resumable, until the other nodes declare
   * it dead: 2.5 heartbeats, PROTOCOL §9), 0 with one URL (set it when that URL is a load
   * balancer in front of a cluster). Not after a close that ended the session (4401, 1012).
   */
  resumeWindowMs?: number;
  /** Subprotocol offered (default `rollcall.v1`; `null` or `""`: none). */
  subprotocol?: string | null;
  /**
   * How long (ms) a request waits for its reply before it rejects with `TIMEOUT` (default
   * 10000). The login too: a login that times out counts as a failed connection attempt.
   */
  requestTimeoutMs?: number;
}

/** The client's connection state. */
export type ConnectionState = "idle" | "connecting" | "online" | "reconnecting" | "closed";

/** What the client's `connection` event carries. */
export interface ConnectionDetail {
  state: ConnectionState;
  /** Reconnect attempt (1, 2, …); 0 on the first dial. */
  attempt?: number;
  /** With `reconnecting` when a retry is scheduled: the delay before it. */
  delayMs?: number;
  /** The close code that ended the previous connection (1006: dropped or refused). */
  code?: CloseCodeValue;
  reason?: string;
  /** With `reconnecting`: the URL the retry dials (the next one when several were given). */
  url?: string;
}

/** Options of `request`. */
export interface RequestOptions {
  /** Milliseconds to wait for the reply before rejecting with `TIMEOUT` (default: the client's `requestTimeoutMs`). */
  timeoutMs?: number;
}

/** Options of `join`. */
export interface JoinOptions {
  channelType?: ChannelType;
  /** Receive presence events and a snapshot (default true). */
  presence?: boolean;
  /** Receive `message` events (default true). */
  messages?: boolean;
  /** Merged into this user's state, as `setState`. */
  state?: State;
  /** With `state` (1.1): its keys expire that many seconds later (0.1–86400). */
  ttlSeconds?: number;
}

/** Options of `setState`. */
export interface SetStateOptions {
  /** (1.1) The keys of this call expire that many seconds later (0.1–86400); typing: 3. */
  ttlSeconds?: number;
}

/** Events of a `RollcallClient`. */
export interface ClientEvents {
  connection: ConnectionDetail;
  /** Every login, reconnects included (`resumed` tells which kind). */
  login: LoginResult;
  /** Every presence event of a joined channel, after its roster applied it. */
  presence: { event: PresenceEvent; roster: Roster };
  message: MessageEvent;
  /** Status records that changed (events and replies), already in `client.statuses`. */
  userStatus: { records: StatusRecord[] };
  /** This user's subscriptions changed (this client or another session). */
  subscriptions: { added: string[]; removed: string[] };
  /** (1.1) `refreshRequired`: call `refresh(newToken)` before `expiresAt` (with `getToken` the client does). */
  session: SessionEvent;
  /** (1.1) A login or `refresh` put a token in force; `expiresAt` as in `client.expiresAt`. */
  token: { expiresAt: number | null };
  /**
   * A request the client made by itself failed (a join again after a reconnect or one made
   * offline, snapshot pages or a resync listing, an automatic refresh); with `retryInMs` when
   * it is tried again then.
   */
  error: { op: "join" | "getOnlineUsers" | "refresh"; channel?: string; error: RollcallError | Error; retryInMs?: number };
  /** Every event, raw, before anything else sees it. */
  event: BrokerEvent;
}

/** Op names of protocol v1.1 (`request(op, args)` sends any of them, or any other string). */
export type Op =
  | "login" | "logout" | "ping" | "refresh"
  | "join" | "leave" | "publish" | "setState" | "removeState" | "getState" | "getOnlineUsers" | "getUserChannels"
  | "setCustomStatus" | "getUserStatus" | "subscribeUserStatus" | "unsubscribeUserStatus" | "getSubscriptions";

/**
 * A logged-in connection that survives network drops: reconnects with backoff and resumes
 * the held session with its `resumeToken`; joins its channels again when it could not.
 */
export class RollcallClient extends Emitter<ClientEvents> {
  /** `url`: one URL, or the URLs of a cluster's nodes, tried in turn on each reconnect. */
  constructor(url: string | readonly string[], options: ClientOptions);
  /** The URL dialled last. */
  readonly url: string;
  /** Every URL the client tries, in turn. */
  readonly urls: readonly string[];
  /** The options, with `platform` and `reconnect` defaults filled in. */
  options: ClientOptions & { platform: Platform; reconnect: boolean };
  state: ConnectionState;
  /** The latest login result. */
  session: LoginResult | null;
  /** (1.1) When the token in force expires (ms), from the login result and each `refresh`; `null` in auth mode `none`. */
  expiresAt: number | null;
  /** Joined channels by `channelKey`. */
  rosters: Map<string, Roster>;
  /** Cached status records by userId (subscriptions, replies, own record). */
  statuses: Map<string, StatusRecord>;
  /** Users this user follows, as far as this client knows. */
  subscriptions: Set<string>;
  /** This client's user id. */
  readonly userId: string;

  /**
   * Connects and logs in; resolves with the first login. A failed connection (or a login
   * answered `RATE_LIMITED`, `UNAVAILABLE`, `INTERNAL`, `TIMEOUT`) is retried with the backoff;
   * rejects only when the client ends (a login refused for good, `reconnect: false`, `close()`).
   */
  open(): Promise<LoginResult>;
  /** Any request: resolves with `result`, rejects with a `RollcallError`. */
  request<T = any>(op: Op | (string & {}), args?: Record<string, unknown>, options?: RequestOptions): Promise<T>;

  /**
   * Joins a channel; the roster (in `rosters` at once, `status` `joining`) fills from the
   * snapshot that follows. Offline it is kept and sent after the next login (the last of
   * `join`/`leave` wins); resolves once the broker accepted it.
   */
  join(channel: string, options?: JoinOptions): Promise<Roster>;
  /** Leaves a channel and forgets its roster at once; offline, kept for the next login. */
  leave(channel: string, channelType?: ChannelType): Promise<void>;
  /** Merges keys into this user's state; resolves with the full state. */
  setState(channel: string, state: State, channelType?: ChannelType, options?: SetStateOptions): Promise<StateResult>;
  /** Removes keys from this user's state. */
  removeState(channel: string, keys: string[], channelType?: ChannelType): Promise<StateResult>;
  /** A member's state (rejects `USER_NOT_PRESENT` for a non-member). */
  getState(channel: string, userId: string, channelType?: ChannelType): Promise<GetStateResult>;
  /** Publishes any JSON value. */
  publish(channel: string, message: Json, channelType?: ChannelType): Promise<{ recipients: number }>;
  /** One page of a channel's members, in byte order of userId. */
  getOnlineUsers(channel: string, options?: GetOnlineUsersOptions): Promise<OnlineUsersPage>;
  /** Every member with states (follows `nextPage`). */
  getAllOnlineUsers(channel: string, channelType?: ChannelType): Promise<Map<string, State>>;
  /** The channels a user is in. */
  getUserChannels(userId: string): Promise<UserChannels>;
  ping(): Promise<{ serverTime: number }>;
  /**
   * (1.1, jwt mode) Replaces the session's token without dropping the connection; later
   * reconnects use it too. Without `token`, asks the `getToken` option for one. A refused
   * token rejects with `UNAUTHORIZED` and leaves the old one in force.
   */
  refresh(token?: string): Promise<{ expiresAt: number }>;

  /** Sets (`null` or `""`: clears) this user's custom status; resolves with the new record. */
  setCustomStatus(customStatus: string | null): Promise<StatusRecord>;
  /** Records of up to 500 users; updates `statuses`. */
  getUserStatus(userIds: string[]): Promise<UserStatusResult>;
  /** `subscribeUserStatus`: follows up to 100 users (`duration` 60–2592000 s, default 86400); offline, kept for the next login. */
  subscribe(userIds: string[], duration?: number): Promise<SubscribeResult>;
  /** `unsubscribeUserStatus`: no list (or empty) stops following everyone; offline, kept for the next login. */
  unsubscribe(userIds?: string[]): Promise<{ failed: FailedId[] }>;
  /** One page of this user's subscriptions (with `userIds`: those, unpaged). */
  getSubscriptions(options?: { userIds?: string[]; page?: string; pageSize?: number }): Promise<SubscriptionsPage>;
  /** Reads every page of subscriptions into `subscriptions` and `statuses`. */
  loadSubscriptions(): Promise<void>;

  /** Ends the session on purpose (others see `leave`, status `loggedOut`) and closes. */
  logout(): Promise<void>;
  /** Closes without logging out (a close frame: others see `leave`); no reconnect. */
  close(): void;
}

/** Creates a client and logs in; rejects with the login error. */
/** Opens a client and logs in; several URLs (a cluster's nodes) are tried in turn on each reconnect. */
export function connect(url: string | readonly string[], options: ClientOptions): Promise<RollcallClient>;
