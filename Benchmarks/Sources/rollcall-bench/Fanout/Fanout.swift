import ArgumentParser
import Foundation

/// `rollcall-bench fanout`: one channel, many receivers, one publisher of 100-byte messages.
/// Ramps the offered rate in steps and reports the highest step the broker sustained
/// (every delivery arrived, no receiver cut, bounded lag) with its broker CPU per delivery.
struct Fanout: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One channel, N receivers, one publisher: highest sustainable deliveries/s and broker CPU µs per delivery.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Receivers in the channel (default 1000; 200 with --quick).")
    var receivers: Int?

    @Option(help: "Seconds of publishing per ramp step (default 5; 2 with --quick).")
    var stepSeconds: Double?

    @Option(help: "Offered deliveries per second of the first step.")
    var startRate = 50_000.0

    @Option(help: "Each step offers this many times the previous one.")
    var growth = 1.4

    @Option(help: "The ramp stops at this offered rate (deliveries per second).")
    var maxRate = 3_000_000.0

    @Option(help: "Unanswered publish requests allowed at once.")
    var window = 128

    @Option(help: "Largest delivery lag, in seconds, that still counts as sustained.")
    var maxLag = 0.25

    @Option(help: "Target: broker CPU µs per delivery at the highest sustained step.")
    var targetMicros = 2.0

    @Flag(help: "Start the broker with http.permessageDeflate on; receivers (plain sockets, which inflate) and the publisher offer it.")
    var deflate = false

    @Flag(help: "Receivers on the client library's lws runtimes instead of plain sockets read on epoll (the bench before issue 16).")
    var lwsReceivers = false

    func validate() throws {
        if let receivers, !(1...18_000).contains(receivers) { throw ValidationError("--receivers must be 1...18000 (fd cap)") }
        if let stepSeconds, !(0.5...60).contains(stepSeconds) { throw ValidationError("--step-seconds must be 0.5...60") }
        guard startRate >= 1, maxRate >= startRate, maxRate <= 10_000_000 else {
            throw ValidationError("need 1 ≤ --start-rate ≤ --max-rate ≤ 10,000,000")
        }
        guard growth > 1.01, growth <= 10 else { throw ValidationError("--growth must be in (1.01, 10]") }
        guard (1...10_000).contains(window) else { throw ValidationError("--window must be 1...10000") }
        guard maxLag > 0, maxLag <= 10 else { throw ValidationError("--max-lag must be in (0, 10]") }
        if deflate && lwsReceivers { throw ValidationError("--deflate applies to the plain-socket receivers, not --lws-receivers") }
    }

    /// The broker config: the publisher's request rate limit is lifted so the publisher can
    /// offer any rate (everything else is the default).
    static let brokerConfig: [String: Any] = [
        "limits": ["requestsPerSecond": 1_000_000, "requestBurst": 1_000_000],
    ]

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let receiverCount = receivers ?? (report.quick ? 200 : 1000)
        let seconds = stepSeconds ?? (report.quick ? 2 : 5)
        var config = Self.brokerConfig
        if deflate { config["http"] = ["permessageDeflate": true] }
        let broker = try target.resolve(config: config)
        defer { broker.finish() }
        print("fanout: broker \(broker.url) pid \(broker.pid); \(receiverCount) receivers, \(seconds) s steps")
        let driver = try FanoutDriver(url: broker.url, receivers: receiverCount, threads: report.threads,
                                      rawReceivers: !lwsReceivers, deflate: deflate)
        defer { driver.shutdown() }

        let joined = driver.open(receivers: receiverCount, timeout: max(30, Double(receiverCount) / 50))
        guard joined == receiverCount, driver.hasPublisher else {
            throw ValidationError("only \(joined) of \(receiverCount) receivers joined (publisher: \(driver.hasPublisher))")
        }
        let ramp = FanoutRamp(driver: driver, sampler: ProcessSampler(pid: broker.pid), receivers: receiverCount,
                              stepSeconds: seconds, drainSeconds: max(2, seconds), window: window,
                              metrics: MetricsScrape(url: broker.url))
        var steps: [FanoutStep] = []
        var best: FanoutStep?
        var stopReason = "reached --max-rate"
        var offered = startRate
        var failures = 0
        while offered <= maxRate, steps.count < 40 {
            print(String(format: "fanout: step %d: offering %.0f deliveries/s (%.1f publishes/s)",
                         steps.count + 1, offered, offered / Double(receiverCount)))
            guard let step = ramp.run(offered: offered) else { throw ValidationError("broker pid \(broker.pid) is gone") }
            steps.append(step)
            if let failure = step.failure(maxLagSeconds: maxLag) {
                print("fanout:   not sustained: \(failure) — \(step.line)")
                failures += 1
                stopReason = "step at \(Int(offered))/s not sustained twice: \(failure)"
                if failures >= 2 { break }
                print("fanout:   retrying this rate once (a shared machine is noisy)")
                continue
            }
            print("fanout:   sustained: \(step.line)")
            best = step
            failures = 0
            offered *= growth
        }
        let result = FanoutReport(steps: steps, best: best, stopReason: stopReason, receivers: receiverCount,
                                  targetMicros: targetMicros, maxLag: maxLag, window: window,
                                  counters: driver.counters.snapshot).result()
        try result.finish(report)
    }
}
