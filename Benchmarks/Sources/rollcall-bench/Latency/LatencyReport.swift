import Foundation
import Histogram

/// Turns the measurement into the scenario's `BenchResult`.
struct LatencyReport {
    let measured: LatencyMeasurement
    let members: Int
    let backgroundReceivers: Int
    let targetP99: Double
    /// The members read with the client library's lws runtimes (`--lws-clients`), not plain sockets.
    let lwsClients: Bool
    let counters: [String: Int]
    /// Objects the broker wrote during the run and how many of them waited for the coalescing
    /// flush (`/metrics`); nil when the broker does not export them.
    var coalescing: (objects: Double, held: Double)?
    /// One frame write on this machine through lws (``LWSBroadcast``), µs: the median of the
    /// rounds run between probes, read by as many threads as the members; nil when not measured.
    /// The floor of the target (issue 16 §4: "a raw lws broadcast to N sockets").
    var lwsFrameWriteMicros: Double?
    /// The same with plain `write` calls (``RawBroadcast``): the kernel's share alone.
    var frameWriteMicros: Double?
    /// The same write measured after the run with one reader thread (the floor until session 8).
    var frameWriteAfterRunMicros: Double?
    /// The plain-`write` broadcast split over writer threads, after the run with one reader
    /// thread: how many, and µs per write (wall time ÷ sockets).
    var splitFrameWrite: (threads: Int, micros: Double)?

    private func millis(_ percentile: Double) -> Double {
        Double(measured.histogram.valueAtPercentile(percentile)) / 1000
    }

    /// The `percent` percentile of `values` (nearest rank); 0 when empty.
    static func percentile(_ values: [Double], _ percent: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }

    func result() -> BenchResult {
        var result = BenchResult(scenario: "latency")
        let histogram = measured.histogram
        let expectedArrivals = measured.probes * (members - 1)
        result.metrics = [
            BenchMetric("p50 setState → stateChanged", millis(50), "ms"),
            BenchMetric("p99 setState → stateChanged", millis(99), "ms", atMost: targetP99),
            BenchMetric("p99.9 setState → stateChanged", millis(99.9), "ms"),
            BenchMetric("max", Double(histogram.max) / 1000, "ms"),
            BenchMetric("arrivals timed", Double(histogram.totalCount)),
            BenchMetric("arrivals expected (probes × \(members - 1))", Double(expectedArrivals)),
            BenchMetric("background deliveries", measured.backgroundPerSecond, "/s"),
            BenchMetric("broker CPU during the run", measured.brokerCores * 100, "% of a core"),
        ]
        if let lwsFrameWriteMicros, lwsFrameWriteMicros > 0 {
            let floorMs = lwsFrameWriteMicros * Double(members - 1) / 1000
            result.metrics.append(BenchMetric(
                "one frame write, lws broadcast to \(members - 1) connections between probes (median of \(measured.lwsFloorRounds.count))",
                lwsFrameWriteMicros, "µs"))
            result.metrics.append(BenchMetric("… its rounds' p10", LatencyReport.percentile(measured.lwsFloorRounds, 10), "µs"))
            result.metrics.append(BenchMetric("… its rounds' p90", LatencyReport.percentile(measured.lwsFloorRounds, 90), "µs"))
            result.metrics.append(BenchMetric("N × one lws frame write (the single-thread floor)", floorMs, "ms"))
            let multiple = millis(99) / floorMs
            result.metrics.append(members >= 1000
                ? BenchMetric("p99 as a multiple of that floor", multiple, "×", atMost: 1.5)
                : BenchMetric("p99 as a multiple of that floor", multiple, "×"))
        }
        if let frameWriteMicros, frameWriteMicros > 0 {
            result.metrics.append(BenchMetric(
                "one frame write, plain write() to \(members - 1) sockets between probes, no lws (median of \(measured.floorRounds.count))",
                frameWriteMicros, "µs"))
            result.metrics.append(BenchMetric("… its rounds' p10", LatencyReport.percentile(measured.floorRounds, 10), "µs"))
            result.metrics.append(BenchMetric("… its rounds' p90", LatencyReport.percentile(measured.floorRounds, 90), "µs"))
            if let lwsFrameWriteMicros, lwsFrameWriteMicros > 0 {
                result.metrics.append(BenchMetric("lws frame write ÷ plain write()", lwsFrameWriteMicros / frameWriteMicros, "×"))
            }
            result.metrics.append(BenchMetric("p99 as a multiple of N × a plain write() (the floor until session 9)",
                                              millis(99) / (frameWriteMicros * Double(members - 1) / 1000), "×"))
            if !measured.batchedFloorRounds.isEmpty {
                let batched = LatencyReport.percentile(measured.batchedFloorRounds, 50)
                result.metrics.append(BenchMetric(
                    "one frame write, the same broadcast as one io_uring submission (as the broker's batched sends) between probes (median of \(measured.batchedFloorRounds.count))",
                    batched, "µs"))
                result.metrics.append(BenchMetric("… its rounds' p90", LatencyReport.percentile(measured.batchedFloorRounds, 90), "µs"))
                result.metrics.append(BenchMetric("plain write() ÷ io_uring submission", frameWriteMicros / batched, "×"))
                result.metrics.append(BenchMetric("p99 as a multiple of N × that io_uring write",
                                                  millis(99) / (batched * Double(members - 1) / 1000), "×"))
            }
            if let frameWriteAfterRunMicros, frameWriteAfterRunMicros > 0 {
                result.metrics.append(BenchMetric("one frame write after the run, one reader thread (the floor until session 8)",
                                                  frameWriteAfterRunMicros, "µs"))
                result.metrics.append(BenchMetric("p99 as a multiple of N × that write",
                                                  millis(99) / (frameWriteAfterRunMicros * Double(members - 1) / 1000), "×"))
            }
            // The split broadcast runs after the run with one reader thread: compared with the
            // one-thread broadcast measured the same way (until session 9 it was divided into
            // the between-probes floor, read by two threads, which overstated the gain).
            if let splitFrameWrite, let frameWriteAfterRunMicros, frameWriteAfterRunMicros > 0 {
                result.metrics.append(BenchMetric(
                    "one frame write, plain write() broadcast split over \(splitFrameWrite.threads) writer threads, after the run (median)",
                    splitFrameWrite.micros, "µs"))
                result.metrics.append(BenchMetric(
                    "1-thread ÷ \(splitFrameWrite.threads)-thread broadcast time (both after the run, one reader thread)",
                    frameWriteAfterRunMicros / splitFrameWrite.micros, "×"))
            }
        }
        // Where the time goes: before the first member has the probe (request path, the
        // broker's turn, the first write and read), and while the broadcast reaches the rest.
        if !measured.firstAfterSend.isEmpty {
            result.metrics.append(BenchMetric("send → first member's arrival, per probe (median)", Self.percentile(measured.firstAfterSend, 50), "ms"))
            result.metrics.append(BenchMetric("first → last member's arrival, per probe (median)", Self.percentile(measured.lastAfterFirst, 50), "ms"))
            result.metrics.append(BenchMetric("first → last member's arrival, per probe (p99)", Self.percentile(measured.lastAfterFirst, 99), "ms"))
        }
        result.metrics.append(BenchMetric("bench CPU during the run (its readers and writers)", measured.benchCores * 100, "% of a core"))
        if let coalescing {
            result.metrics.append(BenchMetric("objects written during the run", coalescing.objects))
            result.metrics.append(BenchMetric("… of which held for the coalescing flush", coalescing.held))
        }
        result.chartTitle = "latency: setState → stateChanged, \(members) members, announce mode"
        result.xLabel = "nines: 1 = p90, 2 = p99, 3 = p99.9, 4 = p99.99"
        result.yLabel = "latency (ms)"
        // x = -log10(1 - p) spreads the tail out: p50 at 0.3, p99 at 2, p99.9 at 3.
        let percentiles: [Double] = [0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99]
        result.series = [
            BenchSeries(name: "setState → stateChanged (ms)",
                        points: percentiles.map { [-log10(1 - $0 / 100), millis($0)] }),
            BenchSeries(name: "target p99 (ms)", points: [[0, targetP99], [4, targetP99]]),
        ]
        result.notes = [
            "Broker config: presence.maxInstantEvents raised to \(max(1000, members + 10)) so the \(members)-member channel stays in announce mode; limits.requestsPerSecond and requestBurst raised to 100,000 for the background publisher.",
            "One member (the prober) calls setState with {\"probe\": \"<seq>\"} \(BenchMetric.format(Double(measured.probes) / max(measured.seconds, 0.001)))/s; every other member records (arrival − send) on the same monotonic clock in an HdrHistogram (per reader thread, merged), scanning raw event lines for the value. \(lwsClients ? "Members and background receivers read with the client library's lws runtimes (--lws-clients)." : "Members and background receivers are plain sockets read on epoll threads; an arrival is timed when its frame is scanned, and a probe's send time is stamped just before the prober's socket write.") The time includes the client's own queueing and both kernels: it is end to end on one 2-core machine.",
            "Background: \(backgroundReceivers) receivers of another channel; measured \(BenchMetric.format(measured.backgroundPerSecond)) deliveries/s (\(measured.backgroundDelivered) of \(measured.backgroundExpected) promised arrived).",
            "Probes \(measured.probes) over \(BenchMetric.format(measured.seconds)) s; arrivals of unknown probes: \(measured.unknownArrivals); member closes: \(counters["memberCloses"] ?? 0); join replies in interval mode: \(counters["intervalModeReplies"] ?? 0).",
        ]
        result.counters = counters
        return result
    }
}
