import Foundation

/// Turns a slow-consumers run into the scenario's `BenchResult`.
struct SlowConsumersReport {
    let outcome: SlowConsumersOutcome
    let slowReceivers: Int
    let fastReceivers: Int
    let window: Int
    /// The `limits.maxOutboundBytes` given to the broker; nil for its default (4 MiB).
    let maxOutboundBytes: Int?

    /// Objects the broker had to queue: every message for every receiver, slow or fast.
    var queuedObjects: Int { outcome.messages * (slowReceivers + fastReceivers) }

    func result() -> BenchResult {
        var result = BenchResult(scenario: "slow-consumers")
        let cpu = outcome.cpu
        var metrics = [
            BenchMetric("broker CPU per queued object", cpu.total / Double(max(1, queuedObjects)) * 1e6, "µs"),
            BenchMetric("broker CPU, first publish to last delivery", cpu.total, "s"),
            BenchMetric("  of which in the kernel", cpu.total > 0 ? cpu.system / cpu.total * 100 : 0, "%"),
        ]
        if let ratio = outcome.curve.secondHalfToFirstHalf {
            metrics.append(BenchMetric("broker CPU, second half of the messages ÷ first half", ratio))
        }
        metrics += [
            BenchMetric("queued objects (messages × receivers)", Double(queuedObjects)),
            BenchMetric("fast receivers' deliveries", Double(outcome.fastDelivered), "", atLeast: Double(outcome.fastExpected)),
            BenchMetric("fast receivers' deliveries expected", Double(outcome.fastExpected)),
            BenchMetric("publishes acknowledged", Double(outcome.acknowledged), "", atLeast: Double(outcome.messages)),
        ]
        if let cuts = outcome.slowConsumerCuts { metrics.append(BenchMetric("slow consumers cut (1013)", Double(cuts))) }
        if let timeouts = outcome.heartbeatTimeouts, timeouts > 0 {
            metrics.append(BenchMetric("connections dropped by heartbeat timeout", Double(timeouts)))
        }
        metrics += [
            BenchMetric("fast receivers closed by the broker", Double(outcome.fastClosed)),
            BenchMetric("wall time, first publish to last delivery", outcome.wallSeconds, "s"),
        ]
        result.metrics = metrics

        result.chartTitle = "slow-consumers: \(slowReceivers) receivers not reading, \(fastReceivers) reading"
        result.xLabel = "messages answered (thousands)"
        result.yLabel = "broker CPU seconds since the first publish"
        var series = [BenchSeries(name: "broker CPU", points: outcome.curve.chartPoints)]
        if let last = outcome.curve.chartPoints.last, last[0] > 0 {
            series.append(BenchSeries(name: "straight line to the end (constant cost per message)", points: [[0, 0], last]))
        }
        result.series = series

        let limit = maxOutboundBytes.map { "\($0) bytes (--max-outbound-bytes)" } ?? "the broker's default (4 MiB)"
        result.notes = [
            "Scenario: \(slowReceivers) plain-socket receivers log in, join \(SlowConsumersRun.channel) (presence false, messages true), read their two replies and never read again, so their outbound queues grow with every message once the kernel's socket buffers are full; \(fastReceivers) receivers join the same channel and read everything. One publisher (not in the channel) pipelines \(outcome.messages) publishes of a 200-character string, at most \(window) unanswered.",
            "Broker config: limits.requestsPerSecond and limits.requestBurst 100,000 (the publisher is not rate-limited); limits.maxOutboundBytes \(limit): a slow receiver whose queue passes it is cut with close 1013 (rollcall_slow_consumer_cuts_total on /metrics).",
            "CPU = Δ broker utime+stime from /proc, from the first publish until every publish was answered and the fast receivers had every message\(outcome.timedOut ? " — STOPPED EARLY (timeout, or a socket closed)" : ""). Per queued object = CPU ÷ (messages × (slow + fast receivers)). With O(1) appends the CPU grows linearly with the messages (second half ÷ first half about 1, or below once the slow sockets stop being written); a queue that is copied on every append makes each message cost more than the last (ratio 3 or more, the chart bends upward). /proc counts CPU in 10 ms ticks: under about 0.5 s (e.g. --quick against a fixed broker) the figures are coarse. Clients run on the same machine.",
            "Publishes sent \(outcome.sent), refused \(outcome.rejected); Σ recipients reported \(outcome.recipients).",
        ]
        if let cuts = outcome.slowConsumerCuts, cuts > 0 {
            result.notes.append("\(cuts) slow receivers were cut with 1013 during the run: their sessions were held and no longer queued messages (held sessions are not counted in recipients), so fewer objects were queued than messages × receivers and the per-object figure is not comparable with a run without cuts.")
        }
        result.counters = [
            "messages": outcome.messages, "sent": outcome.sent, "acknowledged": outcome.acknowledged,
            "rejected": outcome.rejected, "recipients": outcome.recipients,
            "fastExpected": outcome.fastExpected, "fastDelivered": outcome.fastDelivered,
            "slowReceivers": slowReceivers, "fastReceivers": fastReceivers,
            "slowConsumerCuts": outcome.slowConsumerCuts ?? -1, "heartbeatTimeouts": outcome.heartbeatTimeouts ?? -1,
        ]
        return result
    }
}
