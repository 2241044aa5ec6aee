import ArgumentParser
import Foundation

/// `rollcall-bench slow-consumers`: the broker's cost when some receivers stop reading.
/// `--slow-receivers` plain sockets log in, join one channel for messages and then never read
/// again, so the broker's outbound queue for each of them grows with every message;
/// `--fast-receivers` join the same channel and read everything. One publisher pipelines
/// `--messages` 200-byte messages. Reports the broker CPU per queued object (messages ×
/// receivers), which stays flat while appending to a long queue costs O(1) and grows with
/// the queue when an append copies it (the release-build bug fixed in `OutboundQueue`);
/// also the 1013 slow-consumer cuts and whether the fast receivers got every message.
struct SlowConsumers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-consumers",
        abstract: "Receivers that stop reading: broker CPU per queued object while their outbound queues grow.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Receivers that read their login and join replies and then nothing (default 20; 5 with --quick).")
    var slowReceivers: Int?

    @Option(help: "Receivers that read everything and must get every message (default 20; 5 with --quick).")
    var fastReceivers: Int?

    @Option(help: "Messages published (default 8000; 2000 with --quick).")
    var messages: Int?

    @Option(help: "Unanswered publish requests allowed at once.")
    var window = 64

    @Option(help: "The broker's limits.maxOutboundBytes (default: the broker's own, 4 MiB); lower it to see 1013 cuts.")
    var maxOutboundBytes: Int?

    @Option(help: "Seconds to wait, from the first publish, for every reply and delivery.")
    var timeout = 60.0

    func validate() throws {
        if let slowReceivers, !(0...2000).contains(slowReceivers) { throw ValidationError("--slow-receivers must be 0...2000") }
        if let fastReceivers, !(1...2000).contains(fastReceivers) { throw ValidationError("--fast-receivers must be 1...2000") }
        if let messages, !(1...1_000_000).contains(messages) { throw ValidationError("--messages must be 1...1000000") }
        guard (1...10_000).contains(window) else { throw ValidationError("--window must be 1...10000") }
        if let maxOutboundBytes, !(16_384...1 << 30).contains(maxOutboundBytes) {
            throw ValidationError("--max-outbound-bytes must be 16384...1073741824 (at least limits.maxBatchBytes)")
        }
        guard timeout >= 1, timeout <= 600 else { throw ValidationError("--timeout must be 1...600 seconds") }
    }

    /// The broker config: the publisher's request rate limit lifted (it sends thousands of
    /// publishes a second), and `limits.maxOutboundBytes` when given.
    var brokerConfig: [String: Any] {
        var limits: [String: Any] = ["requestsPerSecond": 100_000, "requestBurst": 100_000]
        if let maxOutboundBytes { limits["maxOutboundBytes"] = maxOutboundBytes }
        return ["limits": limits]
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let slowCount = slowReceivers ?? (report.quick ? 5 : 20)
        let fastCount = fastReceivers ?? (report.quick ? 5 : 20)
        let messageCount = messages ?? (report.quick ? 2000 : 8000)
        let broker = try target.resolve(config: brokerConfig)
        defer { broker.finish() }
        guard let port = LoopbackHTTP(url: broker.url)?.port else { throw ValidationError("not a loopback URL: \(broker.url)") }
        print("slow-consumers: broker \(broker.url) (pid \(broker.pid)); \(slowCount) slow and \(fastCount) fast receivers, \(messageCount) messages")

        let pool = RawSocketPool(threads: report.threads)
        defer { pool.shutdown() }
        let slow = SlowReceivers()
        defer { slow.close() }
        try slow.open(count: slowCount, port: Int(port), timeout: 30)
        let fast = FastReceivers(pool: pool)
        defer { fast.close() }
        try fast.open(count: fastCount, port: Int(port), timeout: 30)
        let publisher = try PipelinedPublisher(pool: pool, port: Int(port), window: window)
        defer { publisher.close() }
        print("slow-consumers: \(slowCount) slow and \(fastCount) fast receivers joined, publisher logged in")

        let metrics = MetricsScrape(url: broker.url)
        let run = SlowConsumersRun(publisher: publisher, fast: fast, brokerPID: broker.pid, metrics: metrics,
                                   messages: messageCount, timeout: timeout)
        guard let outcome = run.measure() else { throw ValidationError("broker pid \(broker.pid) is gone") }
        let result = SlowConsumersReport(outcome: outcome, slowReceivers: slowCount, fastReceivers: fastCount,
                                         window: window, maxOutboundBytes: maxOutboundBytes).result()
        try result.finish(report)
    }
}
