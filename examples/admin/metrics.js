// Reads the broker's /metrics page (Prometheus text format 0.0.4) and keeps the history the
// charts draw. Pure functions and one class: Tests/js/admin-metrics.test.mjs runs them in Node.

/** The page's series: `get(name, labels)` is the value of one series (undefined when absent). */
export class MetricsPage {
  constructor(values) {
    this.values = values;
  }

  get(name, labels = {}) {
    return this.values.get(seriesKey(name, labels));
  }
}

/** The key of a series: its name and its labels in name order. */
export function seriesKey(name, labels = {}) {
  const names = Object.keys(labels).sort();
  if (names.length === 0) return name;
  return `${name}{${names.map((label) => `${label}=${JSON.stringify(String(labels[label]))}`).join(",")}}`;
}

/** Parses a text-format page; comment lines and malformed lines are skipped. */
export function parseMetrics(text) {
  const values = new Map();
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const parsed = parseLine(line);
    if (parsed) values.set(seriesKey(parsed.name, parsed.labels), parsed.value);
  }
  return new MetricsPage(values);
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/y;
const unescapeLabel = (text) => text.replace(/\\(.)/g, (_, character) => (character === "n" ? "\n" : character));

function parseLine(line) {
  const name = NAME.exec(line)?.[0];
  if (!name) return null;
  let index = name.length;
  const labels = {};
  if (line[index] === "{") {
    LABEL.lastIndex = index + 1;
    index += 1;
    for (let match = LABEL.exec(line); match; match = LABEL.exec(line)) {
      labels[match[1]] = unescapeLabel(match[2]);
      index = LABEL.lastIndex;
    }
    while (line[index] === " ") index += 1;
    if (line[index] !== "}") return null;
    index += 1;
  }
  const fields = line.slice(index).trim().split(/\s+/);
  const value = parseValue(fields[0]);
  return Number.isNaN(value) && fields[0] !== "NaN" ? null : { name, labels, value };
}

function parseValue(text) {
  if (text === "+Inf" || text === "Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return text === undefined || text === "" ? NaN : Number(text);
}

/** What the charts draw, from one page. */
export function sampleOf(page) {
  return {
    startTime: page.get("process_start_time_seconds"),
    connections: page.get("rollcall_connections_open"),
    liveSessions: page.get("rollcall_sessions", { state: "live" }),
    heldSessions: page.get("rollcall_sessions", { state: "held" }),
    // Sessions each event was queued for, summed: every delivery counted once (a counter).
    deliveries: page.get("rollcall_event_recipients_sum"),
    // Absent while webhooks are off.
    webhookBacklog: page.get("rollcall_webhook_queue_events"),
  };
}

/**
 * The last `capacity` samples, as points `{at, connections, liveSessions, heldSessions,
 * deliveriesPerSecond, webhookBacklog}`. Deliveries per second are the counter's growth over
 * the time between two samples; the first sample, and one after the counter went back (a
 * restart), have none. A sample from another process (its `process_start_time_seconds`
 * differs: a restart, or a load balancer that sent this scrape to another node) starts the
 * history again, and `add` says so.
 */
export class MetricsHistory {
  constructor(capacity = 60) {
    this.capacity = capacity;
    this.points = [];
    this.previous = null;
  }

  /** Adds a sample taken at `atMs` (milliseconds); returns true when the history restarted. */
  add(sample, atMs) {
    const restarted = this.previous !== null && sample.startTime !== this.previous.sample.startTime;
    if (restarted) {
      this.points = [];
      this.previous = null;
    }
    let deliveriesPerSecond = null;
    if (this.previous && sample.deliveries !== undefined && this.previous.sample.deliveries !== undefined) {
      const grown = sample.deliveries - this.previous.sample.deliveries;
      const seconds = (atMs - this.previous.atMs) / 1000;
      if (grown >= 0 && seconds > 0) deliveriesPerSecond = grown / seconds;
    }
    this.points.push({
      at: atMs,
      connections: sample.connections ?? null,
      liveSessions: sample.liveSessions ?? null,
      heldSessions: sample.heldSessions ?? null,
      deliveriesPerSecond,
      webhookBacklog: sample.webhookBacklog ?? null,
    });
    if (this.points.length > this.capacity) this.points.shift();
    this.previous = { sample, atMs };
    return restarted;
  }
}
