// The operator's console reads /metrics itself (examples/admin/metrics.js): the text format
// with labels, escapes and special values, the samples the charts draw, deliveries per second
// from a counter, and a history that starts again when another process answers. The page
// against a real cluster is Tests/browser/test_admin.py; this is the arithmetic, in Node.

import assert from "node:assert/strict";
import { test } from "node:test";

import { MetricsHistory, parseMetrics, sampleOf, seriesKey } from "../../examples/admin/metrics.js";
import { niceCeiling } from "../../examples/admin/chart.js";

const PAGE = `# HELP rollcall_sessions logged-in sessions
# TYPE rollcall_sessions gauge
rollcall_sessions{state="live"} 3.0
rollcall_sessions{state="held"} 1
rollcall_build_info{version="1.1.0",libwebsockets="4.1.6-",swift="6.3"} 1
odd{a="x\\"}y",b="back\\\\slash",c="new\\nline"} +Inf
nan_metric NaN
broken{state="live" 1
process_start_time_seconds 1795770439.37
rollcall_event_recipients_sum 24.0
rollcall_connections_open 2 1795770439000
`;

test("parses series with labels in any order, escapes, +Inf, NaN and a timestamp; skips broken lines", () => {
  const page = parseMetrics(PAGE);
  assert.equal(page.get("rollcall_sessions", { state: "live" }), 3);
  assert.equal(page.get("rollcall_sessions", { state: "held" }), 1);
  assert.equal(page.get("rollcall_build_info", { swift: "6.3", version: "1.1.0", libwebsockets: "4.1.6-" }), 1);
  assert.equal(page.get("odd", { a: 'x"}y', b: "back\\slash", c: "new\nline" }), Infinity);
  assert.ok(Number.isNaN(page.get("nan_metric")));
  assert.equal(page.get("rollcall_connections_open"), 2);
  assert.equal(page.values.size, 8, "the broken line is skipped");
  assert.equal(seriesKey("m", { b: "2", a: "1" }), 'm{a="1",b="2"}');
});

test("a sample holds what the charts draw; the webhook backlog is absent while webhooks are off", () => {
  assert.deepEqual(sampleOf(parseMetrics(PAGE)), {
    startTime: 1795770439.37, connections: 2, liveSessions: 3, heldSessions: 1, deliveries: 24, webhookBacklog: undefined,
  });
});

test("deliveries per second come from the counter's growth; a counter that went back gives none", () => {
  const history = new MetricsHistory(3);
  const sample = (deliveries, extra = {}) => ({ startTime: 100, connections: 1, liveSessions: 1, heldSessions: 0, deliveries, ...extra });
  assert.equal(history.add(sample(10), 1000), false);
  history.add(sample(30), 3000);
  history.add(sample(5), 4000);
  history.add(sample(15, { webhookBacklog: 7 }), 6000);
  assert.deepEqual(history.points.map((p) => p.deliveriesPerSecond), [10, null, 5]);
  assert.equal(history.points.length, 3, "the oldest sample is dropped past the capacity");
  assert.deepEqual(history.points.at(-1), {
    at: 6000, connections: 1, liveSessions: 1, heldSessions: 0, deliveriesPerSecond: 5, webhookBacklog: 7,
  });
});

test("a sample from another process starts the history again", () => {
  const history = new MetricsHistory();
  history.add({ startTime: 100, deliveries: 50 }, 0);
  history.add({ startTime: 100, deliveries: 60 }, 1000);
  assert.equal(history.add({ startTime: 200, deliveries: 70 }, 2000), true);
  assert.equal(history.points.length, 1);
  assert.equal(history.points[0].deliveriesPerSecond, null);
});

test("the y axis tops out at 1, 2 or 5 times a power of ten", () => {
  assert.deepEqual([0, 0.3, 1, 1.5, 3, 7, 10, 11, 480, 5001].map(niceCeiling), [1, 0.5, 1, 2, 5, 10, 10, 20, 500, 10000]);
});
