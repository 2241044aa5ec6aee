import ArgumentParser
import Foundation

/// `rollcall-bench idle`: N logged-in sessions, each joined with presence to one of C
/// channels, then quiet; reports the broker's RSS per session (target ≤ 3.5 KiB, issue 16).
struct Idle: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "N idle logged-in sessions joined to C channels with presence; broker RSS per session.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Sessions to hold (one bench process; at most 19,000 descriptors). Default 15,000; --quick 2,000.")
    var sessions: Int?

    @Option(help: "Channels the sessions are spread over (round-robin).")
    var channels = 100

    @Option(help: "Client receive chunk per connection (bytes).")
    var rxBuffer = 1024

    @Option(help: "Longest wait (s) for the broker's RSS to settle once everyone has joined.")
    var settleMax = 40.0

    /// The per-session target from the issue, in KiB.
    static let targetKiBPerSession = 3.5

    func validate() throws {
        if let sessions, !(1...19_000).contains(sessions) { throw ValidationError("--sessions must be 1...19000 (descriptor cap)") }
        guard (1...10_000).contains(channels) else { throw ValidationError("--channels must be 1...10000") }
        guard (256...65_536).contains(rxBuffer) else { throw ValidationError("--rx-buffer must be 256...65536") }
        guard settleMax >= 1, settleMax <= 600 else { throw ValidationError("--settle-max must be 1...600") }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let count = sessions ?? (report.quick ? 2_000 : 15_000)
        let broker = try target.resolve()
        defer { broker.finish() }
        let timeline = RSSTimeline(brokerPID: broker.pid)
        print("idle: broker \(broker.url) pid \(broker.pid); \(count) sessions over \(channels) channels")

        // Baseline: the broker listening, before the first connection (two samples 0.5 s apart).
        timeline.sample(label: "idle baseline")
        usleep(500_000)
        guard let before = timeline.sample(label: "idle baseline") else { throw ValidationError("broker pid \(broker.pid) is gone") }
        let breakdownBefore = MemoryBreakdown(pid: broker.pid)

        let pool = try LoadPool(url: broker.url, threads: report.threads, connections: count, rxBufferSize: rxBuffer)
        defer { pool.shutdown() }
        let opened = pool.openLoggedIn(count: count, label: "idle login", timeout: max(60, Double(count) / 200),
                                       userId: { "idle-\($0)" })
        let live = opened.sessions.compactMap { $0 }
        print(String(format: "idle: %d/%d logged in in %.1f s", live.count, count, opened.seconds))
        timeline.sample(label: "idle logged in")

        let joiner = ChannelJoiner()
        joiner.countEvents(of: live)
        let channelCount = channels
        let joinSeconds = joiner.join(live, channelName: { "idle-\($0 % channelCount)" },
                                      timeout: max(30, Double(count) / 500), label: "idle join")
        print(String(format: "idle: %d joined in %.1f s; waiting for the broker's RSS to settle",
                     joiner.counters["joined"], joinSeconds))

        // Interval events flush every presence.intervalSeconds (default 5 s): wait past two of
        // them, then until RSS holds still within 64 KiB for 3 s.
        let settled = timeline.waitUntilStable(minimum: 11, maximum: settleMax, window: 3, toleranceKiB: 64, label: "idle settle")
        guard let after = timeline.sample(label: "idle final") else { throw ValidationError("broker pid \(broker.pid) is gone") }
        let breakdown = MemoryBreakdown(pid: broker.pid)
        let held = live.count - joiner.counters["closed"]

        var result = BenchResult(scenario: "idle")
        let perSession = Double(after.brokerKiB - before.brokerKiB) / Double(max(1, held))
        result.metrics = [
            BenchMetric("sessions held (logged in, joined)", Double(min(held, joiner.counters["joined"]))),
            BenchMetric("broker RSS per session", perSession, "KiB", atMost: Self.targetKiBPerSession),
            BenchMetric("broker anonymous memory per session (RSS without code pages)",
                        Double((breakdown?.anonymousKiB ?? 0) - (breakdownBefore?.anonymousKiB ?? 0)) / Double(max(1, held)), "KiB"),
            BenchMetric("broker RSS before first connection", Double(before.brokerKiB) / 1024, "MiB"),
            BenchMetric("broker RSS settled", Double(after.brokerKiB) / 1024, "MiB"),
            BenchMetric("broker RSS peak", Double(timeline.points.map(\.brokerKiB).max() ?? 0) / 1024, "MiB"),
            BenchMetric("bench RSS per session (client, context)", Double(after.benchKiB - before.benchKiB) / Double(max(1, held)), "KiB"),
            BenchMetric("login phase", opened.seconds, "s"),
            BenchMetric("join phase", joinSeconds, "s"),
            BenchMetric("events received (snapshots, intervals)", Double(joiner.counters["events"])),
            BenchMetric("login or join failures", Double(count - live.count + joiner.counters["joinFailed"])),
        ]
        result.chartTitle = "idle: \(count) sessions in \(channels) channels: RSS over time"
        result.xLabel = "seconds"
        result.yLabel = "MiB"
        result.series = [timeline.brokerSeries, timeline.benchSeries]
        result.notes = [
            "RSS per session = (broker VmRSS settled − VmRSS before the first connection) / sessions held; " +
                "\(settled ? "settled" : "NOT settled") (RSS within 64 KiB over 3 s, after ≥ 11 s, two presence intervals).",
            "Broker config: bench defaults (in-memory storage), presence with default limits " +
                "(\(count / max(1, channels)) members per channel: interval mode above 50). Client: \(report.threads) lws threads, rx buffer \(rxBuffer) B.",
            "Broker memory before the first connection: \(breakdownBefore?.description ?? "smaps_rollup unreadable"); " +
                "at the end: \(breakdown?.description ?? "smaps_rollup unreadable").",
            "Broker RSS timeline (s MiB): \(timeline.summary())",
        ]
        result.counters = joiner.counters.snapshot
        try result.finish(report)
    }
}
