// Compile-only check of @rollcall/client's rollcall.d.ts (Tests/js/types.test.mjs copies this
// folder into a project that installed the package and runs `tsc` there, when TypeScript is
// installed). Every line must type-check, except the ones
// after an expect-error directive, which must not.

import {
  CloseCode,
  ERROR_CODES,
  Roster,
  RollcallClient,
  RollcallError,
  channelKey,
  connect,
  type ErrorCode,
  type PresenceEvent,
  type State,
} from "@rollcall/client";

export async function usage(): Promise<void> {
  const client: RollcallClient = await connect("ws://127.0.0.1:8080/v1", { userId: "alice", platform: "web", backoff: { initialMs: 100 } });
  const login = client.session!;
  const dropped: number | undefined = login.messagesDropped;
  const maxKeys: number = login.limits.maxStateKeys;
  void dropped, maxKeys;
  const cluster = new RollcallClient(["ws://n1:8080/v1", "ws://n2:8080/v1"], { userId: "alice", resumeWindowMs: 8000 });
  void cluster;

  const roster: Roster = await client.join("room:lobby", { state: { mood: "happy" }, ttlSeconds: 3 });
  roster.on("change", ({ type, changes, event }) => {
    for (const change of changes) {
      if (change.kind === "join" || change.kind === "state") console.log(change.userId, change.state.mood);
      else console.log(change.kind, change.userId);
    }
    if (event && event.type === "interval") console.log(event.interval.join, event.interval.stateChanged);
    if (type === "self") console.log("own state");
  });
  const state: State | undefined = roster.members.get("bob");
  const ids: string[] = roster.sortedUserIds();
  void state, ids;

  await client.setState("room:lobby", { typing: "1" }, "message", { ttlSeconds: 3 });
  const { state: merged } = await client.removeState("room:lobby", ["typing"]);
  const { userId } = await client.getState("room:lobby", "bob");
  const page = await client.getOnlineUsers("room:lobby", { pageSize: 10 });
  const next: string | null = page.nextPage;
  const all: Map<string, State> = await client.getAllOnlineUsers("room:lobby", "message");
  const where = await client.getUserChannels("bob");
  const { recipients } = await client.publish("room:lobby", { text: "hi", n: [1, 2] });
  const { serverTime } = await client.ping();
  void merged, userId, next, all, where.channels[0].channelType, recipients, serverTime;

  const subscribed = await client.subscribe(["bob"], 3600);
  const failedCode: ErrorCode = subscribed.failed[0].code;
  await client.unsubscribe();
  const subs = await client.getSubscriptions({ pageSize: 50 });
  const record = await client.setCustomStatus(null);
  void failedCode, subs.subscriptions[0].status.platforms, record.status;

  client.on("connection", ({ state, delayMs, code }) => console.log(state, delayMs, code === CloseCode.SHUTDOWN));
  client.on("message", (event) => console.log(event.publisher, event.message));
  client.on("session", (event) => {
    if (event.type === "refreshRequired") client.refresh("new-token").then(({ expiresAt }) => console.log(expiresAt));
  });
  client.on("presence", ({ event }: { event: PresenceEvent }) => {
    switch (event.type) {
      case "join":
      case "stateChanged":
        console.log(event.publisher, event.state);
        break;
      case "leave":
      case "timeout":
        console.log(event.publisher);
        break;
      case "snapshot":
        console.log(event.snapshot.length, event.truncated);
        break;
      case "interval":
        console.log(event.interval.timeout);
        break;
    }
  });
  client.on("userStatus", ({ records }) => records.forEach((r) => console.log(r.status === "loggedOut")));

  try {
    await client.request("frobnicate");
  } catch (error) {
    if (error instanceof RollcallError && error.code === "RATE_LIMITED") console.log(error.retryAfterMs);
  }
  const codes: readonly string[] = ERROR_CODES;
  const key: string = channelKey("scores", "stream");
  void codes, key;

  // Token lifecycle (1.1): getToken (sync or async), expiresAt, refresh with and without a token.
  const refreshing = new RollcallClient("ws://127.0.0.1:8080/v1", { userId: "alice", getToken: async () => "jwt" });
  const syncToken = new RollcallClient("ws://127.0.0.1:8080/v1", { userId: "alice", token: "a", getToken: () => "b" });
  const expiresAt: number | null = refreshing.expiresAt;
  const renewed: { expiresAt: number } = await refreshing.refresh();
  await syncToken.refresh("c");
  refreshing.on("token", ({ expiresAt: next }) => console.log(next === null ? "no expiry" : new Date(next)));
  refreshing.on("error", ({ op, error }) => console.log(op === "refresh", error.message));
  const loginExpiry: number | null | undefined = refreshing.session?.expiresAt;
  void expiresAt, renewed, loginExpiry;
  // @ts-expect-error: getToken returns a string (or a promise of one)
  new RollcallClient("ws://127.0.0.1:8080/v1", { userId: "alice", getToken: () => 42 });
  // @ts-expect-error: refresh takes a token string
  await refreshing.refresh(42);

  // info (1.1) in every listing.
  const name = roster.info.get("bob")?.name;
  const pageInfo = page.users[0].info;
  client.on("presence", ({ event }) => {
    if (event.type === "join") console.log(event.info?.name);
    if (event.type === "snapshot") console.log(event.snapshot.map((m) => m.info));
    if (event.type === "interval") console.log(event.interval.joinInfo?.["bob"]);
  });
  void name, pageInfo;

  // @ts-expect-error: not an error code of the protocol
  const wrong: ErrorCode = "NOPE";
  // @ts-expect-error: channelType is message or stream
  await client.join("x", { channelType: "video" });
  // @ts-expect-error: state values are strings
  await client.setState("x", { n: 1 });
  // @ts-expect-error: unknown client event
  client.on("presense", () => {});
  void wrong;
  client.close();
}
