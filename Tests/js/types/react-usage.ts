// Compile-only check of @rollcall/react's index.d.ts and presenceStore.d.ts (Tests/js/types.test.mjs
// type-checks it with usage.ts in a project that installed both packages).

import {
  RollcallProvider,
  createPresenceStore,
  useConnectionState,
  usePresence,
  useUserStatus,
  type PresenceStatus,
} from "@rollcall/react";
import type { ConnectionState, RollcallClient } from "@rollcall/client";

export function hooks(client: RollcallClient): void {
  const presence = usePresence("room:lobby", { state: { mood: "ok" }, leaveDelayMs: 0 });
  const status: PresenceStatus = presence.status;
  const names: string[] = presence.members.map((m) => m.userId);
  const typing: Promise<unknown> | null = presence.setTyping();
  const bob: string | undefined = useUserStatus(["bob"]).bob?.status;
  const connection: ConnectionState = useConnectionState();
  const store = createPresenceStore(client, "room:x", { channelType: "stream" });
  const unsubscribe: () => void = store.subscribe(() => {});
  void RollcallProvider({ url: "ws://127.0.0.1:8080/v1", options: { userId: "alice" }, children: null });
  void RollcallProvider({ client });
  void status, names, typing, bob, connection, unsubscribe;
  // @ts-expect-error a presence status is one of five
  const wrong: PresenceStatus = "left";
  void wrong;
}
