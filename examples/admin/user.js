// One user: status record (`getUserStatus`), channels (`getUserChannels`), and a button that
// ends every session of the user (`disconnectUser`: live ones closed with 4403).

import { byId, el, timeOfDay } from "./dom.js";
import { call } from "./api.js";

export class UserView {
  constructor() {
    this.userId = null;
    byId("disconnect-ask").addEventListener("click", () => this.confirming(true));
    byId("disconnect-cancel").addEventListener("click", () => this.confirming(false));
  }

  /** Shows `userId` (null hides the panel). */
  select(userId) {
    this.userId = userId;
    byId("user-id").value = userId ?? "";
    byId("disconnect-result").textContent = "";
    this.confirming(false);
    byId("user-panel").hidden = userId === null;
  }

  confirming(on) {
    byId("disconnect-ask").hidden = on;
    byId("disconnect-confirm").hidden = !on;
    if (on) byId("disconnect-reason").focus();
  }

  async show() {
    if (this.userId === null) return;
    const userId = this.userId;
    const [statuses, channels] = await Promise.all([
      call("getUserStatus", { userIds: [userId] }),
      call("getUserChannels", { userId }),
    ]);
    if (userId !== this.userId) return;
    const failed = statuses.failed.find((entry) => entry.userId === userId);
    const record = statuses.statuses[0];
    const status = byId("user-status");
    status.textContent = failed ? `not a valid user id (${failed.code})` : record.status;
    status.dataset.status = failed ? "invalid" : record.status;
    status.className = `status ${status.dataset.status}`;
    byId("user-custom-status").textContent = record?.customStatus ?? "—";
    byId("user-platforms").textContent = record?.platforms.length ? record.platforms.join(", ") : "—";
    byId("user-updated").textContent = timeOfDay(record?.lastUpdateTime);
    byId("user-channels").replaceChildren(...(channels.channels.length === 0
      ? [el("li", { className: "hint" }, "none")]
      : channels.channels.map(({ channel, channelType }) =>
        el("li", { "data-channel": channel, "data-channel-type": channelType }, channelType === "message" ? channel : `${channel} (${channelType})`))));
  }

  /** Ends every session of the shown user; resolves to the number of sessions ended. */
  async disconnect() {
    const userId = this.userId;
    const reason = byId("disconnect-reason").value;
    const { sessions } = await call("disconnectUser", reason ? { userId, reason } : { userId });
    this.confirming(false);
    const result = byId("disconnect-result");
    result.textContent = `Ended ${sessions} session(s) of ${userId}.`;
    result.dataset.sessions = String(sessions);
    return sessions;
  }
}
