// The channels with at least one member, from `getChannels`: filtered by a name prefix, paged.

import { byId, el } from "./dom.js";
import { call } from "./api.js";
import { Pager } from "./pager.js";

export class ChannelList {
  /** @param {(channel: {channel: string, channelType: string}) => void} open shows a channel's roster */
  constructor(open) {
    this.open = open;
    this.prefix = "";
    this.pageSize = 25;
    this.pager = new Pager();
  }

  /** A new filter: back to the first page. */
  filter(prefix, pageSize) {
    this.prefix = prefix;
    this.pageSize = pageSize;
    this.pager.reset();
  }

  /** Reads and shows the current page. */
  async show() {
    const result = await call("getChannels", { prefix: this.prefix, pageSize: this.pageSize, page: this.pager.current });
    this.pager.answered(result.nextPage);
    byId("channels").replaceChildren(...(result.channels.length === 0
      ? [el("tr", {}, el("td", { colspan: 5, className: "hint" }, this.prefix ? `No channel starts with “${this.prefix}”.` : "No channel has a member."))]
      : result.channels.map((channel) => this.row(channel))));
    byId("channels-page").textContent = `page ${this.pager.number}`;
    byId("channels-next").disabled = result.nextPage === null;
    byId("channels-first").disabled = this.pager.number === 1;
  }

  row(channel) {
    return el("tr", {
      "data-testid": "channel", "data-channel": channel.channel, "data-channel-type": channel.channelType,
      "data-occupancy": channel.occupancy, "data-mode": channel.mode,
    },
    el("td", {}, el("button", { type: "button", className: "link", "data-testid": "open-roster", onclick: () => this.open(channel) }, channel.channel)),
    el("td", {}, channel.channelType),
    el("td", { className: "number" }, String(channel.occupancy)),
    el("td", {}, el("span", { className: `mode ${channel.mode}` }, channel.mode)),
    el("td", { className: "number" }, String(channel.seq)));
  }
}
