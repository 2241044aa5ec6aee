import CoreMetrics
import Prometheus
import RollcallCore

/// The histograms the broker records as things happen: per frame written (size, queued
/// bytes), per request handled (time, by op) and per event fanned out (recipients). Only the
/// service thread records; each record takes the histogram's uncontended lock (cost measured
/// in BENCHMARKS.md, "Metrics").
final class ServerHistograms: BrokerInstrumentation {
    /// Payload bytes of each WebSocket data frame written.
    let frameBytes: Recorder
    /// Bytes queued for a connection when a writable callback starts writing to it.
    let queuedBytesAtWrite: Recorder
    /// Sessions each event was queued for.
    let eventRecipients: Recorder
    private let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private var requestTimers: [String: CoreMetrics.Timer] = [:]

    static let frameBytesName = "rollcall_frame_out_bytes"
    static let queuedBytesName = "rollcall_outbound_queue_bytes_at_write"
    static let recipientsName = "rollcall_event_recipients"
    static let requestDurationName = "rollcall_request_duration_seconds"

    /// Byte buckets: 64 B to 1 MiB by powers of 4, then 4 MiB (frames are at most
    /// `limits.maxBatchBytes`, or one larger object; queues at most `limits.maxOutboundBytes`).
    static let byteBuckets: [Double] = [64, 256, 1024, 4096, 16384, 65536, 262_144, 1_048_576, 4_194_304]
    /// Recipient buckets, from a private channel to a large room.
    static let recipientBuckets: [Double] = [0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]
    /// Handling-time buckets: the core answers most ops in microseconds.
    static let durationBuckets: [Duration] = [
        .microseconds(1), .microseconds(2), .microseconds(5), .microseconds(10), .microseconds(25),
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .milliseconds(5), .milliseconds(25), .milliseconds(100),
    ]

    init(registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory) {
        self.registry = registry
        self.factory = factory
        func recorder(_ name: String, _ help: String, _ buckets: [Double]) -> Recorder {
            let handler = registry.makeValueHistogram(descriptor: .named(name, help: help), buckets: buckets)
            return Recorder(label: name, dimensions: [], aggregate: true, handler: handler, factory: factory)
        }
        frameBytes = recorder(Self.frameBytesName, "Payload bytes of each WebSocket data frame written", Self.byteBuckets)
        queuedBytesAtWrite = recorder(Self.queuedBytesName, "Bytes queued for a connection when writing to it starts",
                                      Self.byteBuckets)
        eventRecipients = recorder(Self.recipientsName, "Sessions each event was queued for", Self.recipientBuckets)
    }

    /// The handling-time series of `op`; ops the protocol does not name share `op="other"`, so a
    /// client cannot grow the page with made-up op names.
    private func requestTimer(_ op: String) -> CoreMetrics.Timer {
        let label = op == "invalid" || Broker.knownOps.contains(op) ? op : "other"
        if let timer = requestTimers[label] { return timer }
        let dimensions = [("op", label)]
        let handler = registry.makeDurationHistogram(
            descriptor: .named(Self.requestDurationName, help: "Time the core took to handle a request, by op"),
            labels: dimensions, buckets: Self.durationBuckets)
        let timer = CoreMetrics.Timer(label: Self.requestDurationName, dimensions: dimensions, handler: handler, factory: factory)
        requestTimers[label] = timer
        return timer
    }

    // MARK: BrokerInstrumentation

    func requestHandled(op: String, nanoseconds: UInt64) {
        requestTimer(op).recordNanoseconds(Int64(clamping: nanoseconds))
    }

    func eventFannedOut(recipients: Int) {
        eventRecipients.record(recipients)
    }
}
