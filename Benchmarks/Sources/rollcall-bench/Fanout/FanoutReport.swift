import Foundation

/// Turns the ramp's steps into the scenario's `BenchResult`.
struct FanoutReport {
    let steps: [FanoutStep]
    /// The highest sustained step, nil when even the first was not.
    let best: FanoutStep?
    let stopReason: String
    let receivers: Int
    let targetMicros: Double
    let maxLag: Double
    let window: Int
    let counters: [String: Int]

    func result() -> BenchResult {
        var result = BenchResult(scenario: "fanout")
        if let best {
            result.metrics = [
                BenchMetric("highest sustained deliveries", best.deliveriesPerSecond, "/s"),
                BenchMetric("broker CPU per delivery (at that rate)", best.cpuMicrosPerDelivery, "µs", atMost: targetMicros),
                BenchMetric("  of which in the kernel", best.kernelShare * 100, "%"),
                BenchMetric("objects per frame written at that rate", best.objectsPerFrame),
                BenchMetric("bytes on the wire per delivery (receivers' sockets)", best.bytesPerDelivery, "B"),
                BenchMetric("publishes at that rate", best.publishRate, "/s"),
                BenchMetric("broker CPU at that rate", best.brokerCores * 100, "% of a core"),
                BenchMetric("delivery lag at end of step", best.lagSeconds * 1000, "ms"),
            ]
        } else {
            result.metrics = [BenchMetric("highest sustained deliveries", 0, "/s", atLeast: 1)]
        }
        if let lowest = steps.filter({ $0.delivered > 0 }).map(\.cpuMicrosPerDelivery).min() {
            result.metrics.append(BenchMetric("lowest broker CPU per delivery (any step)", lowest, "µs"))
        }
        result.metrics.append(BenchMetric("receivers", Double(receivers)))
        result.metrics.append(BenchMetric("ramp steps", Double(steps.count)))
        result.chartTitle = "fanout: \(receivers) receivers, one publisher, 100-byte messages"
        result.xLabel = "offered deliveries/s (thousands)"
        result.yLabel = "delivered k/s; broker CPU ns/delivery ÷ 10"
        result.series = [
            BenchSeries(name: "delivered (thousands/s)", points: steps.map { [$0.offered / 1000, $0.deliveriesPerSecond / 1000] }),
            BenchSeries(name: "broker CPU per delivery (ns ÷ 10)", points: steps.map { [$0.offered / 1000, $0.cpuMicrosPerDelivery * 100] }),
        ]
        result.notes = [
            "Broker config: limits.requestsPerSecond and limits.requestBurst raised to 1,000,000 so the single publisher is not rate-limited; everything else default (maxBatchBytes 16384, maxOutboundBytes 4 MiB).",
            "Message: a 98-character JSON string (100 bytes encoded); receivers join with presence false, messages true and count `{\"event\":\"message\"` lines without parsing. The publisher keeps at most \(window) publishes unanswered.",
            "A step is sustained when every delivery promised by the acknowledged publishes (Σ recipients) arrived, no receiver was closed, no publish was refused, the publisher kept its schedule, deliveries/s reached 95 % of the offered rate and receivers were at most \(BenchMetric.format(maxLag)) s behind (publishes sent × receivers − deliveries) at the end of the step. A failed rate is tried once more before the ramp stops. Ramp stop: \(stopReason).",
            "CPU per delivery = Δ broker CPU (utime+stime from /proc) / Δ deliveries over the step and its drain. Clients run on the same 2-core machine.",
            "Steps: " + steps.map { String(format: "%.0fk→%.0fk/s %.2fµs %.1f/frame %.0fB", $0.offered / 1000, $0.deliveriesPerSecond / 1000, $0.cpuMicrosPerDelivery, $0.objectsPerFrame, $0.bytesPerDelivery) }.joined(separator: ", "),
        ]
        result.counters = counters
        return result
    }
}
