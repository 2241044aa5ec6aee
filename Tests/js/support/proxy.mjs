// A TCP proxy in front of the broker whose connections can be cut without a WebSocket close
// frame (what a network drop looks like to the broker: held session, resumable), and which
// can refuse new connections for a while.

import { connect, createServer } from "node:net";

export class CuttableProxy {
  /** New connections are accepted and closed at once while true. */
  refusing = false;
  /** While true, what the broker sends is dropped (the client's requests still get through). */
  muted = false;
  #sockets = new Set();
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
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        this.#sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on("data", (data) => {
      if (!this.muted) client.write(data);
    });
  }

  /** Drops every open connection at once, both ways (TCP reset; no close frame). */
  cut() {
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
