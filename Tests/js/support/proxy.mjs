// A TCP proxy in front of the broker whose connections can be cut without a WebSocket close
// frame (what a network drop looks like to the broker: held session, resumable), frozen (the
// connection stays open but nothing crosses it either way: a sleeping laptop, a dead NAT), and
// which can refuse new connections for a while.

import { connect, createServer } from "node:net";

export class CuttableProxy {
  /** New connections are accepted and closed at once while true. */
  refusing = false;
  /** While true, what the broker sends is dropped (the client's requests still get through). */
  muted = false;
  /** Bytes forwarded from clients to the broker, all connections. */
  bytesFromClients = 0;
  #sockets = new Set();
  #links = new Set(); // {client, upstream, frozen}
  #rewrites = []; // [{from: Buffer, to: Buffer}], each applied once to the broker's bytes
  #server;

  /** @private */
  constructor(server, targetPort) {
    this.#server = server;
    this.targetPort = targetPort;
  }

  /**
   * Listens on 127.0.0.1 on a free port and forwards to 127.0.0.1:`targetPort`.
   * @param {number} targetPort
   * @returns {Promise<CuttableProxy>}
   */
  static async start(targetPort) {
    let proxy;
    const server = createServer((client) => proxy.#accept(client));
    proxy = new CuttableProxy(server, targetPort);
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** The proxy's port. */
  get port() {
    return this.#server.address().port;
  }

  /** `ws://127.0.0.1:PROXYPORT/v1` */
  get url() {
    return `ws://127.0.0.1:${this.port}/v1`;
  }

  /** Open connections (each counted once, client side). */
  get connections() {
    return this.#sockets.size / 2;
  }

  #accept(client) {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(this.targetPort, "127.0.0.1");
    const link = { client, upstream, frozen: false };
    this.#links.add(link);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        this.#sockets.delete(socket);
        // Frozen: the other side hears nothing of it either (the broker's heartbeat timeout
        // does not reach the client), until the proxy is cut or closed.
        if (link.frozen) return;
        this.#links.delete(link);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (data) => {
      if (link.frozen) return;
      this.bytesFromClients += data.length;
      upstream.write(data);
    });
    upstream.on("data", (data) => {
      if (!this.muted && !link.frozen) client.write(this.#rewrite(data));
    });
  }

  /**
   * Freezes every open connection: both sockets stay open, and whatever either side sends from
   * now on is dropped (no close, no reset). New connections are not frozen.
   */
  freeze() {
    for (const link of this.#links) link.frozen = true;
  }

  /**
   * Once, replaces `from` by `to` (same length: WebSocket frame lengths stay right) in what the
   * broker sends, e.g. to make the client lose one event. Needs uncompressed frames.
   * @param {string} from
   * @param {string} to
   */
  rewriteOnce(from, to) {
    if (Buffer.byteLength(from) !== Buffer.byteLength(to)) throw new Error("rewriteOnce needs strings of the same length");
    this.#rewrites.push({ from: Buffer.from(from), to: Buffer.from(to) });
  }

  /** Applies the first pending rewrite that matches in `data`. */
  #rewrite(data) {
    for (const [index, { from, to }] of this.#rewrites.entries()) {
      const at = data.indexOf(from);
      if (at < 0) continue;
      this.#rewrites.splice(index, 1);
      const copy = Buffer.from(data);
      to.copy(copy, at);
      return copy;
    }
    return data;
  }

  /** Drops every open connection at once, both ways (TCP reset; no close frame). */
  cut() {
    this.#links.clear();
    for (const socket of [...this.#sockets]) {
      if (typeof socket.resetAndDestroy === "function" && socket.readyState !== "opening") socket.resetAndDestroy();
      else socket.destroy();
    }
    this.#sockets.clear();
  }

  /** Stops listening and cuts every connection. */
  async close() {
    this.cut();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
