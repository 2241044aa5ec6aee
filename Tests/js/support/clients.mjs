// Client helpers for the tests: quick reconnects, and closing every client a test opened.

import { RollcallClient } from "./rollcall.mjs";

/** Backoff for tests: first retry within 20–40 ms, at most 400 ms apart. */
export const FAST_BACKOFF = { initialMs: 40, maxMs: 400, factor: 2 };

/** Opens clients and closes them all at the end of a test. */
export class ClientPool {
  /** @type {RollcallClient[]} */ clients = [];

  /**
   * Connects and logs in as `userId`.
   * @param {string} url
   * @param {string} userId
   * @param {object} [options] more `ClientOptions`
   * @returns {Promise<RollcallClient>}
   */
  async open(url, userId, options = {}) {
    const client = new RollcallClient(url, { userId, platform: "other", backoff: FAST_BACKOFF, ...options });
    this.clients.push(client);
    await client.open();
    return client;
  }

  /** Closes every client (close frames: the broker ends their sessions). */
  closeAll() {
    for (const client of this.clients) client.close();
    this.clients = [];
  }
}

/** A roster's members as a plain object, for deep equality. */
export function membersOf(roster) {
  return Object.fromEntries([...roster.members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A Map userId → state as a plain object sorted by userId. */
export function plain(map) {
  return Object.fromEntries([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
