// Starts the real `rollcall` broker for the JavaScript tests: a temporary config (in-memory
// storage, quiet logs, 127.0.0.1, port 0 unless given), then waits for the line
// `listening on 127.0.0.1:PORT` on stdout. `stop()` sends SIGTERM (SIGKILL after 5 s).
// The binary is `.build/debug/rollcall` under the repository root, or `$ROLLCALL_BINARY`.

import { spawn } from "node:child_process";
import { after, before } from "node:test";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (this file is Tests/js/support/broker.mjs). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The broker binary the tests start. */
export const BINARY = process.env.ROLLCALL_BINARY || join(ROOT, ".build", "debug", "rollcall");

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;

/** Deep merge: objects merge key by key, anything else in `override` replaces. */
export function merge(base, override) {
  const result = { ...base };
  for (const [key, value] of Object.entries(override ?? {})) {
    const existing = result[key];
    const bothObjects = [value, existing].every((v) => v && typeof v === "object" && !Array.isArray(v));
    result[key] = bothObjects ? merge(existing, value) : value;
  }
  return result;
}

/** A running broker process. Create with `Broker.start(config)`. */
export class Broker {
  /** @type {import("node:child_process").ChildProcess} */ process;
  /** @type {number} */ port;
  /** Everything the broker wrote to stdout and stderr. */ output = "";
  /** @type {Promise<{code: number | null, signal: string | null}>} */ exited;

  /** @private */
  constructor(config, workdir) {
    this.config = config;
    this.workdir = workdir;
  }

  /**
   * Starts a broker with the test defaults deep-merged with `config`.
   * @param {object} [config] sections of the broker's config file
   * @param {{port?: number}} [options] the port to listen on (default 0: a free one)
   * @returns {Promise<Broker>}
   */
  static async start(config = {}, { port = 0 } = {}) {
    accessSync(BINARY, constants.X_OK); // throws with the path when it is not built
    const merged = merge(
      {
        listen: { host: "127.0.0.1", port: 0 },
        storage: { path: null },
        log: { level: "warning" },
        http: { staticDir: join(ROOT, "examples", "web") },
      },
      config,
    );
    const broker = new Broker(merged, mkdtempSync(join(tmpdir(), "rollcall-js-")));
    await broker.#launch(port);
    return broker;
  }

  /** `ws://127.0.0.1:PORT/v1` */
  get url() {
    return `ws://127.0.0.1:${this.port}/v1`;
  }

  /** True until the process has exited. */
  get running() {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  async #launch(port) {
    const configPath = join(this.workdir, "config.json");
    writeFileSync(configPath, JSON.stringify(this.config));
    const child = spawn(BINARY, ["--config", configPath, "--port", String(port)], {
      cwd: this.workdir,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.process = child;
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
    child.stderr.setEncoding("utf8").on("data", (text) => (this.output += text));
    this.port = await new Promise((resolve, reject) => {
      let pending = "";
      const timer = setTimeout(() => fail(`no "listening on" line within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
      const fail = (why) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(new Error(`broker did not start: ${why}\n${this.output}`));
      };
      const onExit = (code) => fail(`exited with ${code}`);
      child.once("error", (error) => fail(error.message));
      child.once("exit", onExit);
      child.stdout.setEncoding("utf8").on("data", (text) => {
        this.output += text;
        pending += text;
        const match = /listening on 127\.0\.0\.1:(\d+)/.exec(pending);
        if (match) {
          clearTimeout(timer);
          child.off("exit", onExit);
          resolve(Number(match[1]));
        }
      });
    });
  }

  /**
   * SIGTERM, then waits for the exit (SIGKILL after 5 s).
   * @returns {Promise<{code: number | null, signal: string | null}>}
   */
  async stop() {
    if (this.running) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => this.process.kill("SIGKILL"), STOP_TIMEOUT_MS);
      const exit = await this.exited;
      clearTimeout(timer);
      return exit;
    }
    return this.exited;
  }

  /**
   * Kills the process at once (SIGKILL: no close frames, no goodbye to the cluster) and waits
   * for the exit.
   * @returns {Promise<{code: number | null, signal: string | null}>}
   */
  async kill() {
    if (this.running) this.process.kill("SIGKILL");
    return this.exited;
  }

  /** Starts the broker again on the same port (after `stop()`), with the same config. */
  async restart() {
    await this.stop();
    await this.#launch(this.port);
  }

  /** Stops the broker and removes its temporary folder. */
  async dispose() {
    await this.stop();
    rmSync(this.workdir, { recursive: true, force: true });
  }

  /**
   * The value of one sample of `/metrics`, e.g. `rollcall_sessions{state="held"}`.
   * @param {string} sample
   * @returns {Promise<number | null>}
   */
  async metric(sample) {
    const text = await (await fetch(`http://127.0.0.1:${this.port}/metrics`)).text();
    for (const line of text.split("\n")) {
      if (line.startsWith(sample + " ")) return Number(line.slice(sample.length + 1));
    }
    return null;
  }
}

/**
 * The hooks most suites share: a broker started (with `config`) before the suite's tests and
 * handed to `use`; after them, the pool's clients closed and the broker stopped.
 * @param {{ closeAll(): void }} pool
 * @param {(broker: Broker) => void} use
 * @param {object} [config]
 */
export function startBrokerAroundSuite(pool, use, config) {
  /** @type {Broker | undefined} */ let broker;
  before(async () => {
    broker = await Broker.start(config);
    use(broker);
  });
  after(async () => {
    pool.closeAll();
    await broker?.dispose();
  });
}
