import Prometheus
import RollcallCore

/// The histograms the broker records as things happen: per frame written (size, queued
/// bytes), per request handled (time, by op) and per event fanned out (recipients). Only the
/// service thread records; each record takes the histogram's uncontended lock.
///
/// They are swift-prometheus histograms held directly — the `RecorderHandler` and
/// `TimerHandler` swift-metrics' `Recorder` and `Timer` would call — to keep the per-frame
/// record at its floor: 30–36 ns direct, 33–80 ns through the façade across runs
/// (BENCHMARKS.md, "Metrics").
final class ServerHistograms: BrokerInstrumentation {
    /// Payload bytes of each WebSocket data frame written.
    let frameBytes: ValueHistogram
    /// Bytes queued for a connection when a writable callback starts writing to it.
    let queuedBytesAtWrite: ValueHistogram
    /// Sessions each event was queued for.
    let eventRecipients: ValueHistogram
    private let registry: PrometheusCollectorRegistry
    private var requestDurations: [RequestLabel: DurationHistogram] = [:]

    static let frameBytesName = "rollcall_frame_out_bytes"
    static let queuedBytesName = "rollcall_outbound_queue_at_write_bytes"
    /// The name before 1.2 (it did not end in its unit), still written for one version.
    static let deprecatedQueuedBytesName = "rollcall_outbound_queue_bytes_at_write"
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

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        frameBytes = registry.makeValueHistogram(
            descriptor: .named(Self.frameBytesName, help: "Payload bytes of each WebSocket data frame written"),
            buckets: Self.byteBuckets)
        queuedBytesAtWrite = registry.makeValueHistogram(
            descriptor: .named(Self.queuedBytesName, help: "Bytes queued for a connection when writing to it starts"),
            buckets: Self.byteBuckets)
        eventRecipients = registry.makeValueHistogram(
            descriptor: .named(Self.recipientsName, help: "Sessions each event was queued for"),
            buckets: Self.recipientBuckets)
    }

    /// The handling-time series of a request, labelled `op` with ``RequestLabel/text``: an
    /// ``Op``, `invalid`, `unknown`, `api.<op>` or `api.unknown` (a closed set: made-up names
    /// cannot grow the page).
    private func requestDuration(_ request: RequestLabel) -> DurationHistogram {
        if let histogram = requestDurations[request] { return histogram }  // one hash on the usual path
        let histogram = registry.makeDurationHistogram(
            descriptor: .named(Self.requestDurationName, help: "Time the core took to handle a request, by op"),
            labels: [("op", request.text)], buckets: Self.durationBuckets)
        requestDurations[request] = histogram
        return histogram
    }

    // MARK: BrokerInstrumentation

    func requestHandled(_ request: RequestLabel, nanoseconds: UInt64) {
        requestDuration(request).recordNanoseconds(Int64(clamping: nanoseconds))
    }

    func eventFannedOut(recipients: Int) {
        eventRecipients.record(Double(recipients))
    }
}
