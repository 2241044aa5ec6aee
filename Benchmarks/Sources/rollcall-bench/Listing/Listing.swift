import ArgumentParser
import Foundation

/// `rollcall-bench listing`: the core's listing ops measured in-process (no sockets), so the
/// figure is the broker's own cost of decoding the request, building the page and encoding
/// the reply: one `getOnlineUsers` page of 100 from a 100,000-member channel,
/// `getUserChannels` for a user in 1000 channels, and a `setState` in a 1000-member presence
/// channel (the latency bench's probe: one event and 999 `.send` actions), with warm caches
/// and after evicting them.
struct Listing: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "In-process core benchmark: a getOnlineUsers page from a huge channel, getUserChannels for a user in many channels.")

    @OptionGroup var report: ReportOptions

    @Option(help: "Members of the big channel (quick: 20,000).")
    var members = 100_000

    @Option(help: "Channels the many-channel user is in (quick: 1000 as well).")
    var channels = 1000

    @Option(help: "Timed calls per figure (quick: 500).")
    var iterations = 5000

    func validate() throws {
        guard (100...1_000_000).contains(members) else { throw ValidationError("--members must be 100...1000000") }
        guard (1...100_000).contains(channels) else { throw ValidationError("--channels must be 1...100000") }
        guard (10...1_000_000).contains(iterations) else { throw ValidationError("--iterations must be 10...1000000") }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let memberCount = report.quick ? min(members, 20_000) : members
        let calls = report.quick ? min(iterations, 500) : iterations
        let bench = ListingWorkload(channels: channels)

        print("listing: filling one channel with \(memberCount) members (in-process broker)")
        let fillSeconds = bench.fillBigChannel(members: memberCount)
        print(String(format: "listing: filled in %.2f s; joining one user to %d channels", fillSeconds, channels))
        bench.joinManyChannels()

        var result = BenchResult(scenario: "listing")
        let firstPage = try bench.time(calls: calls) { bench.onlineUsersPage(cursor: nil) }
        let middleCursor = try bench.cursor(atMember: memberCount / 2)
        let middlePage = try bench.time(calls: calls) { bench.onlineUsersPage(cursor: middleCursor) }
        let statePage = try bench.time(calls: calls) { bench.onlineUsersPage(cursor: middleCursor, includeState: true) }
        let userChannels = try bench.time(calls: calls) { bench.userChannels() }
        bench.fillBroadcastChannel()
        var recipients = 0
        let broadcastWarm = try bench.time(calls: calls) { bench.broadcastState(recipients: &recipients) }
        let broadcastCold = try bench.time(calls: calls, before: { bench.evictCaches() }) { bench.broadcastState(recipients: &recipients) }

        result.metrics = [
            BenchMetric("members in the big channel", Double(memberCount)),
            BenchMetric("getOnlineUsers page of 100, middle of the channel (median)", middlePage.median, "µs", atMost: 50),
            BenchMetric("getOnlineUsers page of 100, middle (p99)", middlePage.p99, "µs"),
            BenchMetric("getOnlineUsers first page of 100 (median)", firstPage.median, "µs"),
            BenchMetric("getOnlineUsers page of 100 with state (median)", statePage.median, "µs"),
            BenchMetric("getUserChannels, user in \(channels) channels (median)", userChannels.median, "µs", atMost: 100),
            BenchMetric("getUserChannels (p99)", userChannels.p99, "µs"),
            BenchMetric("reply bytes of a page of 100", Double(bench.lastPageBytes), "B"),
            BenchMetric("setState to \(recipients) presence members, warm caches (median)", broadcastWarm.median, "µs"),
            BenchMetric("… per recipient", broadcastWarm.median * 1000 / Double(max(1, recipients)), "ns"),
            BenchMetric("setState to \(recipients) presence members, caches evicted first (median)", broadcastCold.median, "µs"),
            BenchMetric("… per recipient", broadcastCold.median * 1000 / Double(max(1, recipients)), "ns"),
        ]
        result.notes = [
            "In-process: a `Broker` with the system clock, fed `.received` frames as the transport would; each timing covers request decoding, the op and reply encoding (\(calls) calls, median and p99). Members of the big channel joined with `presence: false`; the \(ListingWorkload.broadcastMembers) members of the broadcast channel with presence, in announce mode (`presence.maxInstantEvents` raised), and \"caches evicted\" writes 64 MiB before each timed setState (untimed; twice the L3 cache of the machine in BENCHMARKS.md), as 100 ms of other work between two probes does in the broker. Config: `limits.maxChannelsPerSession` = \(channels), request rate limits raised (one session makes every call).",
        ]
        result.chartTitle = "listing: per-call cost (µs)"
        result.xLabel = "percentile"
        result.yLabel = "µs per call"
        result.series = [
            BenchSeries(name: "getOnlineUsers page (middle)", points: middlePage.curve),
            BenchSeries(name: "getUserChannels (\(channels) channels)", points: userChannels.curve),
        ]
        try result.finish(report)
    }
}
