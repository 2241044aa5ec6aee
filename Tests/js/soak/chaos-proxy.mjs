// A TCP proxy for the soak (soak.mjs) whose links fail one by one, at random, as real networks
// do: a link is cut (TCP reset both ways, no WebSocket close frame: a Wi-Fi switch, a crashed
// middlebox) or frozen (both sockets stay open and nothing crosses either way: a sleeping laptop,
// a dead NAT). A frozen link holds what was sent into it (TCP would retransmit it), and later
// either thaws (everything held arrives, late) or is cut. The proxy can also refuse new links for
// a while (a captive portal). Every decision comes from the `random` function it is given, so a
// seed replays the same schedule of faults.

import { connect, createServer } from "node:net";

/** One client connection and its upstream connection to the broker. */
class Link {
  /** @param {import("node:net").Socket} client @param {import("node:net").Socket} upstream */
  constructor(client, upstream) {
    this.client = client;
    this.upstream = upstream;
    /** True while nothing is forwarded either way (what is sent meanwhile is held). */
    this.frozen = false;
    this.closed = false;
    /** Bytes held while frozen, per direction. */
    this.held = { up: [], down: [] };
    client.on("data", (data) => this.#forward("up", this.upstream, data));
    upstream.on("data", (data) => this.#forward("down", this.client, data));
  }

  #forward(direction, to, data) {
    if (this.frozen) this.held[direction].push(data);
    else to.write(data);
  }

  freeze() {
    this.frozen = true;
  }

  /** Delivers what was held, in order, and forwards again. */
  thaw() {
    this.frozen = false;
    for (const data of this.held.up.splice(0)) this.upstream.write(data);
    for (const data of this.held.down.splice(0)) this.client.write(data);
  }

  cut() {
    this.closed = true;
    for (const socket of [this.client, this.upstream]) {
      if (typeof socket.resetAndDestroy === "function" && socket.readyState !== "opening") socket.resetAndDestroy();
      else socket.destroy();
    }
  }
}

export class ChaosProxy {
  /** Faults made so far. */
  counts = { links: 0, cuts: 0, freezes: 0, thawed: 0, cutWhileFrozen: 0, massCuts: 0, refusals: 0, refusedLinks: 0 };
  /** @type {Set<Link>} */ #links = new Set();
  #refusingUntil = 0;
  #server;
  #timer = null;

  /** @private */
  constructor(server, targetPort, random) {
    this.#server = server;
    this.targetPort = targetPort;
    this.random = random;
  }

  /**
   * Listens on 127.0.0.1 (free port) and forwards to 127.0.0.1:`targetPort`.
   * @param {number} targetPort
   * @param {() => number} random a seeded source of numbers in [0, 1)
   * @returns {Promise<ChaosProxy>}
   */
  static async start(targetPort, random) {
    let proxy;
    const server = createServer((client) => proxy.#accept(client));
    proxy = new ChaosProxy(server, targetPort, random);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** `ws://127.0.0.1:PROXYPORT/v1` */
  get url() {
    return `ws://127.0.0.1:${this.#server.address().port}/v1`;
  }

  /** Links open now. */
  get openLinks() {
    return this.#links.size;
  }

  #accept(client) {
    if (Date.now() < this.#refusingUntil) {
      this.counts.refusedLinks += 1;
      client.destroy();
      return;
    }
    this.counts.links += 1;
    const upstream = connect(this.targetPort, "127.0.0.1");
    const link = new Link(client, upstream);
    this.#links.add(link);
    for (const socket of [client, upstream]) {
      socket.on("error", () => {});
      socket.on("close", () => {
        // A frozen link hears nothing of its other side either, until it thaws or is cut.
        if (link.frozen && !link.closed) return;
        this.#links.delete(link);
        link.closed = true;
        client.destroy();
        upstream.destroy();
      });
    }
  }

  /**
   * Starts failing links: every `tickMs`, each open link is cut with probability `cutRate` and
   * frozen with probability `freezeRate` (per second of link life); a frozen link stays frozen
   * for `freezeMs` [min, max] and then thaws or, with probability `cutAfterFreeze`, is cut. With
   * probability `massCutRate` per second, a share `massCutShare` of all links is cut at once (a
   * broker-side network blip: many clients reconnect and rejoin together); with probability
   * `refuseRate` per second the proxy refuses new links for `refuseMs`.
   */
  startFaults({
    tickMs = 250, cutRate = 1 / 90, freezeRate = 1 / 90, freezeMs = [300, 8000], cutAfterFreeze = 0.4,
    massCutRate = 1 / 120, massCutShare = 0.3, refuseRate = 1 / 180, refuseMs = [500, 3000],
  } = {}) {
    const perTick = (ratePerSecond) => ratePerSecond * (tickMs / 1000);
    const between = ([low, high]) => low + this.random() * (high - low);
    this.#timer = setInterval(() => {
      if (this.random() < perTick(massCutRate)) {
        this.counts.massCuts += 1;
        for (const link of [...this.#links]) {
          if (!link.frozen && this.random() < massCutShare) this.#cut(link);
        }
      }
      if (this.random() < perTick(refuseRate)) {
        this.counts.refusals += 1;
        this.#refusingUntil = Date.now() + between(refuseMs);
      }
      for (const link of [...this.#links]) {
        if (link.frozen || link.closed) continue;
        const roll = this.random();
        if (roll < perTick(cutRate)) {
          this.#cut(link);
        } else if (roll < perTick(cutRate) + perTick(freezeRate)) {
          this.counts.freezes += 1;
          link.freeze();
          const cutAtEnd = this.random() < cutAfterFreeze;
          setTimeout(() => {
            if (link.closed) return;
            if (cutAtEnd) {
              this.counts.cutWhileFrozen += 1;
              this.#cut(link);
            } else {
              this.counts.thawed += 1;
              link.thaw();
            }
          }, between(freezeMs));
        }
      }
    }, tickMs);
  }

  #cut(link) {
    this.counts.cuts += 1;
    this.#links.delete(link);
    link.cut();
  }

  /** Stops making faults: frozen links thaw, new links are accepted. */
  stopFaults() {
    clearInterval(this.#timer);
    this.#timer = null;
    this.#refusingUntil = 0;
    for (const link of this.#links) if (link.frozen) link.thaw();
  }

  /** Stops listening and cuts every link. */
  async close() {
    this.stopFaults();
    for (const link of [...this.#links]) link.cut();
    this.#links.clear();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
