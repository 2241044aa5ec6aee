// A throwaway `redis-server` for the cluster tests: a free loopback port, its own temporary
// folder, no persistence; `stop()` kills it. Never the system service.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A free TCP port on 127.0.0.1 (bound once, then released). */
async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  /** @type {number} */ port;

  static async start() {
    const redis = new RedisServer();
    redis.port = await freePort();
    redis.dir = mkdtempSync(join(tmpdir(), "rollcall-js-redis-"));
    redis.process = spawn("redis-server", [
      "--port", String(redis.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", redis.dir,
    ], { stdio: "ignore" });
    // Ready once it accepts a connection.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const up = await new Promise((resolve) => {
        const socket = connect(redis.port, "127.0.0.1", () => { socket.end(); resolve(true); });
        socket.once("error", () => resolve(false));
      });
      if (up) return redis;
      if (Date.now() > deadline) throw new Error("redis-server did not start");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** `redis://127.0.0.1:PORT` */
  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }

  async stop() {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const exited = new Promise((resolve) => this.process.once("exit", resolve));
      this.process.kill("SIGKILL");
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
