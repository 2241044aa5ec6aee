// One channel's members with their state and `info`, from `getOnlineUsers`, paged.

import { byId, el } from "./dom.js";
import { call } from "./api.js";
import { Pager } from "./pager.js";

const PAGE_SIZE = 50;

export class RosterView {
  /** @param {(userId: string) => void} openUser shows a user */
  constructor(openUser) {
    this.openUser = openUser;
    this.channel = null;
    this.pager = new Pager();
  }

  /** Shows `channel` (`{channel, channelType}`) from its first page; null closes the panel. */
  select(channel) {
    this.channel = channel;
    this.pager.reset();
    byId("roster-panel").hidden = channel === null;
  }

  async show() {
    if (!this.channel) return;
    const { channel, channelType } = this.channel;
    const result = await call("getOnlineUsers", {
      channel, channelType, includeState: true, pageSize: PAGE_SIZE, page: this.pager.current,
    });
    this.pager.answered(result.nextPage);
    const title = byId("roster-channel");
    title.textContent = channelType === "message" ? channel : `${channel} (${channelType})`;
    title.dataset.channel = channel;
    title.dataset.channelType = channelType;
    byId("roster-occupancy").textContent = String(result.totalOccupancy);
    byId("roster-seq").textContent = String(result.seq);
    byId("roster").replaceChildren(...(result.users.length === 0
      ? [el("tr", {}, el("td", { colspan: 3, className: "hint" }, "Nobody is in this channel now."))]
      : result.users.map((user) => this.row(user))));
    byId("roster-page").textContent = `page ${this.pager.number}`;
    byId("roster-next").disabled = result.nextPage === null;
    byId("roster-first").disabled = this.pager.number === 1;
  }

  row(user) {
    const state = Object.entries(user.state ?? {});
    return el("tr", { "data-testid": "member", "data-user-id": user.userId },
      el("td", {}, el("button", { type: "button", className: "link", "data-testid": "open-user", onclick: () => this.openUser(user.userId) }, user.userId)),
      el("td", {}, state.length === 0 ? el("span", { className: "hint" }, "—")
        : state.map(([key, value]) => el("span", { className: "chip", "data-testid": "chip", "data-key": key, "data-value": value }, `${key}=${value}`))),
      el("td", {}, user.info ? el("code", { "data-testid": "info" }, JSON.stringify(user.info)) : el("span", { className: "hint" }, "—")));
  }
}
