import ArgumentParser
import Foundation

/// `rollcall-bench storm`: N users join one channel within `--join-seconds`, then a share of
/// them leave; measures the presence traffic, the broker's CPU and how long until every
/// remaining client's roster (snapshot + events) is the final membership, which is checked
/// against `getOnlineUsers`. Runs each size of `--users` on a fresh broker (or the attached one).
struct Storm: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join storm: N users join one channel in 10 s, then 10% leave; convergence and broker cost.")

    @OptionGroup var target: BrokerTargetOptions
    @OptionGroup var report: ReportOptions

    @Option(help: "Comma-separated storm sizes, run one after the other (default 1000,10000; --quick: 300).")
    var users: String?

    @Option(help: "Seconds over which the joins are spread (default 10; --quick: 3).")
    var joinSeconds: Double?

    @Option(help: "Share of the users that leave after the last join.")
    var leaveFraction = 0.1

    @Option(help: "Seconds over which the leaves are spread (default 1; --quick: 0.5).")
    var leaveSeconds: Double?

    @Option(help: "presence.intervalSeconds of the launched broker (default 5, the broker's default; --quick: 1).")
    var intervalSeconds: Double?

    @Option(help: "presence.snapshotMaxMembers of the launched broker (default: the broker's 1000, clients page the rest; with --lws-clients the largest size, so snapshots are whole).")
    var snapshotMaxMembers: Int?

    @Flag(help: "Storm clients on the client library's lws runtimes (no paging) instead of plain sockets read on epoll.")
    var lwsClients = false

    @Flag(help: "Start the broker with http.permessageDeflate on and have the plain-socket clients offer it (and inflate).")
    var deflate = false

    @Option(help: "With --deflate: the broker's http.permessageDeflateMemLevel (1-9; default: the broker's 8).")
    var deflateMemLevel: Int?

    @Flag(help: "Also feed every line to the client library's roster per client (the scan the line cache shares) and count differences (costs the bench's CPU).")
    var checkSharedScans = false

    @Option(help: "Client receive chunk per connection in bytes (lws rx_buffer_size); large rosters arrive in fewer service turns.")
    var clientReceiveBytes = 16384

    func validate() throws {
        guard let sizes = try? parsedSizes(), !sizes.isEmpty else {
            throw ValidationError("--users takes comma-separated positive counts, e.g. 1000,10000")
        }
        if sizes.contains(where: { $0 > 18_000 }) { throw ValidationError("--users: at most 18000 sessions per size") }
        if let deflateMemLevel, !deflate || !(1...9).contains(deflateMemLevel) {
            throw ValidationError("--deflate-mem-level takes 1...9 and goes with --deflate")
        }
        if deflate && lwsClients { throw ValidationError("--deflate applies to the plain-socket clients, not --lws-clients") }
        if !(256...1_048_576).contains(clientReceiveBytes) { throw ValidationError("--client-receive-bytes must be within 256...1048576") }
        if !(0...1).contains(leaveFraction) { throw ValidationError("--leave-fraction must be within 0...1") }
        if let joinSeconds, !(0.1...120).contains(joinSeconds) { throw ValidationError("--join-seconds must be within 0.1...120") }
        if let leaveSeconds, !(0...60).contains(leaveSeconds) { throw ValidationError("--leave-seconds must be within 0...60") }
        if let intervalSeconds, !(0.1...60).contains(intervalSeconds) { throw ValidationError("--interval-seconds must be within 0.1...60") }
    }

    private func parsedSizes() throws -> [Int] {
        guard let users else { return report.quick ? [300] : [1000, 10_000] }
        return try users.split(separator: ",").map {
            guard let n = Int($0.trimmingCharacters(in: .whitespaces)), n > 0 else { throw ValidationError("bad size \($0)") }
            return n
        }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let sizes = try parsedSizes()
        let interval = intervalSeconds ?? (report.quick ? 1 : 5)
        let snapshotMax = snapshotMaxMembers ?? (lwsClients ? max(1000, sizes.max() ?? 1000) : 1000)
        var outcomes: [StormOutcome] = []
        for size in sizes {
            let plan = StormPlan(users: size, joinSeconds: joinSeconds ?? (report.quick ? 3 : 10),
                                 leaveFraction: leaveFraction, leaveSeconds: leaveSeconds ?? (report.quick ? 0.5 : 1),
                                 intervalSeconds: interval, channel: "storm:\(size):\(getpid())")
            let broker = try target.resolve(config: brokerConfig(interval: interval, snapshotMax: snapshotMax))
            defer { broker.finish() }
            print("storm \(size): broker \(broker.url) (pid \(broker.pid))")
            // At least one client service thread per 500 sessions: each lws turn polls every socket of its
            // thread, so the bench's cost per received chunk grows with the sockets per thread (perf: poll dominates).
            // Raw clients read with epoll: the pool's threads (--threads) are enough.
            let threads = lwsClients ? max(report.threads, (size + 499) / 500) : report.threads
            outcomes.append(try StormDriver(plan: plan, broker: broker, threads: threads,
                                            clientReceiveBytes: clientReceiveBytes, rawClients: !lwsClients, deflate: deflate,
                                            checkSharedScans: checkSharedScans).run())
        }
        var result = StormReport(outcomes: outcomes, snapshotMax: snapshotMax, attached: target.url != nil).result()
        result.notes.insert("broker config: presence.intervalSeconds \(BenchMetric.format(interval)), maxInstantEvents 50, "
                            + "hysteresis 10 (defaults), snapshotMaxMembers \(snapshotMax)"
                            + (deflate ? ", http.permessageDeflate true (clients offer it), memLevel \(deflateMemLevel ?? 8)" : "")
                            + (target.url != nil ? " (attached broker: its own config applies)" : ""), at: 0)
        try result.finish(report)
    }

    /// Presence defaults except the interval and the snapshot cap; everything else as the bench defaults.
    private func brokerConfig(interval: Double, snapshotMax: Int) -> [String: Any] {
        var config: [String: Any] = ["presence": ["maxInstantEvents": 50, "hysteresis": 10, "intervalSeconds": interval,
                                                  "snapshotMaxMembers": snapshotMax]]
        if deflate { config["http"] = ["permessageDeflate": true, "permessageDeflateMemLevel": deflateMemLevel ?? 8] }
        return config
    }
}
