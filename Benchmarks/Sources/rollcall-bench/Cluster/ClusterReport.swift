import Foundation

/// Everything the cluster scenario measured, turned into one ``BenchResult``: metrics (the
/// flat list for JSON and the summary) and one Markdown table per measurement (as notes).
struct ClusterReport {
    var nodes = 3
    var costs: [OpCost] = []
    var floors: [CostFloor] = []
    var bigJoins: [BigChannelJoinOutcome] = []
    /// Latency samples (ms) per receiving node, cluster and standalone.
    var clusterLatency: [[Double]] = []
    var standaloneLatency: [[Double]] = []
    var latencyMembers = 0
    var latencyProbes = 0
    var latencyRate = 0.0
    var storms: [ClusterStormOutcome] = []
    var kill: NodeKillOutcome?
    var pause: RedisPauseOutcome?
    var notes: [String] = []
    var failures: [String] = []

    func result() -> BenchResult {
        var result = BenchResult(scenario: "cluster")
        result.chartTitle = "cluster: setState → stateChanged latency percentiles (\(latencyMembers) members)"
        result.xLabel = "percentile"
        result.yLabel = "ms"
        result.notes = notes
        addCosts(&result)
        addMasterSpread(&result)
        addFloors(&result)
        addBigJoins(&result)
        addLatency(&result)
        addStorms(&result)
        addFailures(&result)
        result.notes += failures.map { "NOT MEASURED: \($0)" }
        return result
    }

    private func f(_ value: Double?) -> String { value.map { BenchMetric.format($0) } ?? "—" }

    /// On a Redis Cluster: each master's CPU per op and how far the busiest and the idlest lie
    /// from their mean (issue 30: within ±15 %).
    private func addMasterSpread(_ result: inout BenchResult) {
        let spread = costs.filter { ($0.redisCPUPerMaster?.count ?? 0) > 1 }
        guard !spread.isEmpty else { return }
        var table = ["| setup | op | Redis CPU µs/op on each master | spread from the mean |", "| --- | --- | --- | ---: |"]
        for cost in spread {
            let perMaster = (cost.redisCPUPerMaster ?? []).map { $0 * 1e6 / Double(max(1, cost.ops)) }
            let mean = perMaster.reduce(0, +) / Double(perMaster.count)
            let deviation = mean > 0 ? perMaster.map { abs($0 / mean - 1) }.max() ?? 0 : 0
            table.append("| \(cost.setup) | \(cost.op) | \(perMaster.map { f($0) }.joined(separator: ", ")) | ±\(f(deviation * 100)) % |")
            result.metrics.append(BenchMetric("\(cost.setup): spread of Redis CPU per \(cost.op) across masters", deviation * 100, "%"))
        }
        result.notes.append("Redis CPU per op on each master of the Redis Cluster (schedstat, idle removed):\n\n" + table.joined(separator: "\n"))
    }

    private func addCosts(_ result: inout BenchResult) {
        guard !costs.isEmpty else { return }
        var redisTable = ["| setup | op | ops | failed | Redis CPU µs/op (schedstat) | evalsha calls/op | evalsha µs/op | hget calls/op | hget µs/op | command µs/op (evalsha … all cmdstats) | ceiling ops/s (1e6 ÷ CPU µs) |",
                          "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        var brokerTable = ["| setup | op | ops | broker CPU µs/op (all nodes) | of which kernel | Redis CPU µs/op |",
                           "| --- | --- | ---: | ---: | ---: | ---: |"]
        for cost in costs {
            let ops = Double(max(1, cost.ops))
            brokerTable.append("| \(cost.setup) | \(cost.op) | \(cost.ops) | \(f(cost.brokerMicrosPerOp)) | "
                               + "\(cost.brokerSystemShare.map { "\(Int(($0 * 100).rounded())) %" } ?? "—") | \(f(cost.redisMicrosPerOp)) |")
            result.metrics.append(BenchMetric("\(cost.setup): broker CPU per \(cost.op)", cost.brokerMicrosPerOp, "µs"))
            guard let redisMicros = cost.redisMicrosPerOp else { continue }
            let ceiling = redisMicros > 0 ? 1e6 / redisMicros : .infinity
            redisTable.append("| \(cost.setup) | \(cost.op) | \(cost.ops) | \(cost.failed) | \(f(redisMicros)) | "
                              + "\(f(cost.evalshaCalls.map { Double($0) / ops })) | \(f(cost.evalshaMicrosPerOp)) | "
                              + "\(f(cost.hgetCalls.map { Double($0) / ops })) | \(f(cost.hgetUsec.map { $0 / ops })) | "
                              + "\(f(cost.commandMicrosLow)) … \(f(cost.commandMicrosHigh)) | \(f(ceiling)) |")
            result.metrics.append(BenchMetric("\(cost.setup): Redis CPU per \(cost.op) (schedstat)", redisMicros, "µs"))
            result.metrics.append(BenchMetric("\(cost.setup): evalsha µs per \(cost.op)", cost.evalshaMicrosPerOp ?? 0, "µs"))
            result.metrics.append(BenchMetric("\(cost.setup): derived cluster ceiling, \(cost.op)s", ceiling, "/s"))
        }
        result.notes.append("Redis cost per op (CONFIG RESETSTAT, a known number of ops, INFO commandstats; "
                            + "idle heartbeat/reaper cost of the same seconds subtracted). The ceiling is a derived estimate: "
                            + "Redis runs every script on one thread, so 1e6 ÷ (Redis CPU µs per op) ops/s is the most the "
                            + "whole cluster can do of that op alone, whatever the number of nodes.\n\n"
                            + redisTable.joined(separator: "\n"))
        result.notes.append("Broker CPU per op (all nodes added up, schedstat, idle subtracted; the kernel share from /proc/PID/stat ticks).\n\n" + brokerTable.joined(separator: "\n"))
    }

    private func addLatency(_ result: inout BenchResult) {
        guard !clusterLatency.isEmpty else { return }
        var table = ["| setup | receivers on | samples | p50 ms | p99 ms | p99.9 ms | max ms |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        func add(_ setup: String, _ node: String, _ samples: [Double], _ result: inout BenchResult) {
            table.append("| \(setup) | \(node) | \(samples.count) | \(f(Percentile.of(samples, 50))) | \(f(Percentile.of(samples, 99))) "
                         + "| \(f(Percentile.of(samples, 99.9))) | \(f(samples.last)) |")
            result.metrics.append(BenchMetric("\(setup), \(node): setState → stateChanged p50", Percentile.of(samples, 50), "ms"))
            result.metrics.append(BenchMetric("\(setup), \(node): setState → stateChanged p99", Percentile.of(samples, 99), "ms"))
            result.series.append(BenchSeries(name: "\(setup), \(node)",
                                             points: [50, 90, 99, 99.9].map { [$0, Percentile.of(samples, $0)] }))
        }
        for (index, samples) in clusterLatency.enumerated() {
            let name = index == 0 ? "node A (the prober's)" : "node \(Character(UnicodeScalar(65 + index)!))"
            add("\(nodes) nodes", name, samples, &result)
        }
        if let standalone = standaloneLatency.first { add("standalone", "the one node", standalone, &result) }
        result.notes.append("Cross-node latency: \(latencyMembers) members of one quiet announce-mode channel spread over the "
                            + "nodes; the member on node A sets its state \(latencyProbes) times at \(f(latencyRate))/s; "
                            + "every other member times the stateChanged.\n\n" + table.joined(separator: "\n"))
    }

    private func addStorms(_ result: inout BenchResult) {
        guard !storms.isEmpty else { return }
        var table = ["| setup | users | joins over | joins ok/failed | rosters whole after last join | last event after last join | broker CPU s (all nodes) | Redis CPU s | rosters final | getOnlineUsers |",
                     "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for storm in storms {
            table.append("| \(storm.setup) | \(storm.users) | \(f(storm.lastJoinAt)) s | \(storm.joinsOK)/\(storm.joinsFailed) | "
                         + "\(storm.convergedAfterLastJoin.map { "\(f($0)) s" } ?? "not within 30 s") | \(f(storm.lastEventAfterLastJoin)) s | "
                         + "\(f(storm.brokerCPU)) | \(f(storm.redisCPU)) | \(storm.finalRosters)/\(storm.users) | \(storm.onlineUsers) |")
            result.metrics.append(BenchMetric("storm \(storm.setup): broker CPU", storm.brokerCPU, "s"))
            if let redis = storm.redisCPU { result.metrics.append(BenchMetric("storm \(storm.setup): Redis CPU", redis, "s")) }
            if let converged = storm.convergedAfterLastJoin {
                result.metrics.append(BenchMetric("storm \(storm.setup): convergence after the last join", converged, "s"))
            }
        }
        result.notes.append("Join storm (one channel, interval mode above 100 members, intervalSeconds 1; CPU from the first "
                            + "join until the clients were quiet, idle cost included).\n\n" + table.joined(separator: "\n"))
    }

    private func addFailures(_ result: inout BenchResult) {
        if let kill {
            if let seconds = kill.lastTimeoutAfterKill {
                result.metrics.append(BenchMetric("kill -9 node A → last timeout on node B", seconds, "s", atMost: kill.expectedAtMost))
            }
            result.notes.append("kill -9: \(kill.sessions) sessions on node A in a channel watched from node B; node A gets SIGKILL; "
                                + "\(kill.timeoutsSeen)/\(kill.sessions) timeouts seen, the last \(f(kill.lastTimeoutAfterKill)) s after the kill "
                                + "(expected ≤ presence.timeoutSeconds \(f(NodeGroup.presenceTimeoutSeconds)) + cluster.nodeTimeoutSeconds "
                                + "\(f(NodeGroup.nodeTimeoutSeconds)) + 1 = \(f(kill.expectedAtMost)) s; heartbeatSeconds \(f(NodeGroup.heartbeatSeconds))).")
        }
        if let pause {
            if let healthy = pause.healthyAfterResume {
                result.metrics.append(BenchMetric("Redis back (SIGCONT) → /healthz 200 on every node", healthy, "s"))
            }
            if let rosters = pause.rostersAfterResume {
                result.metrics.append(BenchMetric("Redis back (SIGCONT) → every roster = getOnlineUsers", rosters, "s"))
            }
            if let truth = pause.truthAfterResume {
                result.metrics.append(BenchMetric("Redis back (SIGCONT) → every roster = the true membership", truth, "s"))
            }
            result.metrics.append(BenchMetric("Redis back: members closed during the stop still listed", Double(pause.staleMembers.count), "",
                                              atMost: 0))
            result.notes.append("Redis back: redis-server SIGSTOP for \(f(pause.pauseSeconds)) s with \(pause.members) members and one "
                                + "watcher per node in a channel, \(pause.closedDuringPause) members closing their connections while it is "
                                + "stopped; /healthz while stopped: \(pause.statusesWhilePaused); after SIGCONT: every node 200 after "
                                + "\(f(pause.healthyAfterResume)) s, every watcher's roster = its node's getOnlineUsers after "
                                + "\(f(pause.rostersAfterResume)) s, both = the members left after "
                                + (pause.truthAfterResume.map { "\(f($0)) s" } ?? "— (not within 30 s)") + "; "
                                + (pause.staleMembers.isEmpty ? "no stale members." : "still listed at the end although closed "
                                   + "during the stop: \(pause.staleMembers)."))
        }
    }
}
