// A throwaway `redis-server` for the cluster tests: a free loopback port, its own temporary
// folder, no persistence; `stop()` kills it. Never the system service. `RedisCluster`: three
// of them as the masters of a Redis Cluster (`cluster-enabled yes`, each bus on a free port
// of its own, joined by `redis-cli --cluster create`), for the broker's `redis+cluster://`.

import { execFile, spawn } from "node:child_process";
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

  /** Starts one on a free port, with `args` after the harness's own; resolves once it accepts connections. */
  static async start(args = []) {
    const redis = new RedisServer();
    redis.port = await freePort();
    redis.dir = mkdtempSync(join(tmpdir(), "rollcall-js-redis-"));
    redis.process = spawn("redis-server", [
      "--port", String(redis.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", redis.dir, ...args,
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

/** Runs `redis-cli` with `args`; resolves with its stdout, rejects when it fails or takes over `timeoutMs`. */
function redisCli(args, timeoutMs = 10_000) {
  return new Promise((resolve, reject) => {
    execFile("redis-cli", args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`redis-cli ${args.join(" ")}: ${error.message} ${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * A throwaway Redis Cluster of `masters` masters and no replicas (the tests kill brokers, not
 * Redis): each a `RedisServer` with `cluster-enabled yes` and its bus on a free port of its own
 * (`cluster-port`: the default, port + 10000, does not exist above 55535), joined by
 * `redis-cli --cluster create`, ready once every node says `cluster_state:ok` and knows them all.
 */
export class RedisCluster {
  /** @type {RedisServer[]} */ nodes = [];

  static async start({ masters = 3 } = {}) {
    const cluster = new RedisCluster();
    try {
      for (let index = 0; index < masters; index++) {
        const busPort = await freePort();
        cluster.nodes.push(await RedisServer.start([
          "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
          "--cluster-port", String(busPort),
        ]));
      }
      const created = await redisCli(["--cluster", "create", ...cluster.nodes.map((node) => `127.0.0.1:${node.port}`),
        "--cluster-replicas", "0", "--cluster-yes"], 30_000);
      if (!created.includes("[OK] All 16384 slots covered")) throw new Error(`redis-cli --cluster create failed:\n${created}`);
      const deadline = Date.now() + 20_000;
      for (;;) {
        const states = await Promise.all(cluster.nodes.map(async (node) => {
          const info = await redisCli(["-p", String(node.port), "CLUSTER", "INFO"]).catch(() => "");
          return info.includes("cluster_state:ok") && info.includes(`cluster_known_nodes:${masters}`);
        }));
        if (states.every(Boolean)) return cluster;
        if (Date.now() > deadline) throw new Error("the Redis Cluster did not become healthy within 20 s");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** `redis+cluster://127.0.0.1:PORT,…`, every node a seed. */
  get url() {
    return `redis+cluster://${this.nodes.map((node) => `127.0.0.1:${node.port}`).join(",")}`;
  }

  async stop() {
    for (const node of this.nodes) await node.stop();
  }
}

/**
 * The Redis backends the cluster tests run on, by name: one `redis-server`, and a Redis
 * Cluster of 3 masters. Each `start()` resolves with `{ url, stop() }`.
 */
export const REDIS_BACKENDS = [
  { name: "one Redis", start: () => RedisServer.start() },
  { name: "Redis Cluster", start: () => RedisCluster.start() },
];
