import ArgumentParser
import Foundation

/// `rollcall-bench cluster`: N release nodes on a redis-server the bench starts itself, set
/// against one node with Redis and one standalone node: Redis cost per op and the cluster
/// ceiling it implies, cross-node latency, a join storm, broker CPU per op, kill -9 of a
/// node and a stopped Redis. CPU per op rather than throughput: a 2-core machine running
/// every node, Redis and the clients cannot show throughput scaling.
struct Cluster: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cluster mode: Redis µs per op and the ceiling, cross-node latency, join storm, CPU per op, kill -9, Redis stop.")

    @OptionGroup var report: ReportOptions

    @OptionGroup var broker: BrokerBinaryOption

    @Option(help: "redis-server binary (a throwaway instance on a free port is started).")
    var redisServer = "/usr/bin/redis-server"

    @Option(help: "Nodes of the cluster.")
    var nodes = 3

    @Flag(help: "Measure only CPU per op (each setup's join, setState and publish batches, their floors, the big-channel joins), e.g. to profile a node.")
    var costOnly = false

    @Flag(help: "Measure only the joins into one big channel on the cluster (--big-channel members), e.g. for an A/B of that path.")
    var bigChannelOnly = false

    @Option(help: "Members of the big channel that new sessions join and leave (issue 30: 1000).")
    var bigChannel = 1000

    @Option(help: "Run the nodes on a Redis Cluster of this many masters (1 or 3) the bench starts, instead of one redis-server: CPU per op on each master and their spread, on the nodes, and cross-node latency.")
    var redisClusterMasters = 0

    func validate() throws {
        guard (2...6).contains(nodes) else { throw ValidationError("--nodes must be 2...6") }
        guard (10...20_000).contains(bigChannel) else { throw ValidationError("--big-channel must be 10...20000") }
        guard [0, 1, 3].contains(redisClusterMasters) else { throw ValidationError("--redis-cluster-masters must be 1 or 3") }
    }

    /// Sizes of the phases: --quick keeps the whole run near a minute.
    private var costSessions: Int { report.quick ? 150 : 300 }
    private var costRounds: Int { report.quick ? 6 : 20 }
    private var latencyMembers: Int { 48 }
    private var latencyProbes: Int { report.quick ? 300 : 3000 }
    private var latencyRate: Double { 100 }
    private var stormUsers: Int { report.quick ? 400 : 1000 }
    private var stormSeconds: Double { report.quick ? 3 : 10 }
    private var bigChannelJoiners: Int { 100 }
    private var bigChannelRounds: Int { report.quick ? 3 : 10 }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        let binary = broker.path
        var out = ClusterReport(nodes: nodes)
        let failures = PhaseFailures()
        out.latencyMembers = latencyMembers
        out.latencyProbes = latencyProbes
        out.latencyRate = latencyRate
        out.notes.append("machine at start: loadavg \(Self.loadAverage()), \(ProcessInfo.processInfo.activeProcessorCount) cores "
                         + "(shared: other engineers may be compiling)")
        if redisClusterMasters > 0 {
            try runOnRedisCluster(&out, failures)
            return
        }
        let redis = try RedisServerProcess(binary: redisServer)
        defer { redis.stop() }
        out.notes.append("node config (over the bench defaults: 127.0.0.1, port 0, warning logs): "
                         + NodeGroup.configText(redis: redis) + "; standalone: the same without `cluster`. "
                         + "redis-server \(Self.redisVersion(redis)) --save \"\" --appendonly no on 127.0.0.1:\(redis.port).")

        // The cluster.
        try phase("\(nodes) nodes", failures) {
            let group = try NodeGroup(label: "\(nodes) nodes", count: nodes, binary: binary, redis: redis)
            defer { group.stop() }
            guard group.waitHealthy(timeout: 10) else { throw StormError("the nodes never answered /healthz 200") }
            if bigChannelOnly {
                try phase("big channel, \(nodes) nodes", failures) { out.bigJoins.append(try bigChannelJoins(group, redis: redis)) }
                return
            }
            try measure(group, redis: redis, setup: "\(nodes) nodes + Redis", into: &out, latency: \.clusterLatency, failures,
                        phases: (cost: "Redis cost, \(nodes) nodes", latency: "cross-node latency", storm: "storm, \(nodes) nodes"))
            try phase("big channel, \(nodes) nodes", failures) { out.bigJoins.append(try bigChannelJoins(group, redis: redis)) }
            if costOnly { return }
            try phase("Redis stop", failures) {
                out.pause = try RedisPause.run(group: group, redis: redis, members: 30, closing: 3, pauseSeconds: 3)
            }
            try phase("kill -9", failures) {
                out.kill = try NodeKill.run(group: group, sessions: 50)
            }
        }
        redis.command(["FLUSHALL"])
        if bigChannelOnly {
            out.failures = failures.list
            out.notes.append("machine at end: loadavg \(Self.loadAverage())")
            try out.result().finish(report)
            return
        }

        // One node on Redis: the broker's own cost of cluster mode.
        try phase("1 node + Redis", failures) {
            let group = try NodeGroup(label: "1 node + Redis", count: 1, binary: binary, redis: redis)
            defer { group.stop() }
            guard group.waitHealthy(timeout: 10) else { throw StormError("the node never answered /healthz 200") }
            out.costs += try OpCostRun(group: group, redis: redis, setup: "1 node + Redis",
                                       sessions: costSessions, rounds: costRounds).measure()
            out.floors += try CostFloorRun(group: group, redis: redis, setup: "1 node + Redis", rounds: costRounds, batch: costSessions).measure()
        }

        // One standalone node (cluster.redis null).
        try phase("standalone", failures) {
            let group = try NodeGroup(label: "standalone", count: 1, binary: binary, redis: nil)
            defer { group.stop() }
            try measure(group, redis: nil, setup: "standalone", into: &out, latency: \.standaloneLatency, failures,
                        phases: (cost: "cost, standalone", latency: "latency, standalone", storm: "storm, standalone"))
        }
        out.failures = failures.list
        out.notes.append("machine at end: loadavg \(Self.loadAverage())")
        out.notes.append("Scaling is measured as CPU per op: 2 cores running every node, redis-server and the load clients "
                         + "cannot show throughput scaling.")
        try out.result().finish(report)
    }

    /// The op costs, the latency (stored at `latency`) and the storm of one group of nodes, each
    /// a phase of its own named by `phases`; `setup` names the group in the tables.
    private func measure(_ group: NodeGroup, redis: RedisServerProcess?, setup: String, into out: inout ClusterReport,
                         latency: WritableKeyPath<ClusterReport, [[Double]]>, _ failures: PhaseFailures,
                         phases: (cost: String, latency: String, storm: String)) throws {
        try phase(phases.cost, failures) {
            out.costs += try OpCostRun(group: group, redis: redis, setup: setup, sessions: costSessions, rounds: costRounds).measure()
        }
        if let redis {
            try phase("floors, \(setup)", failures) {
                out.floors += try CostFloorRun(group: group, redis: redis, setup: setup, rounds: costRounds, batch: costSessions).measure()
            }
        }
        if costOnly { return }
        try phase(phases.latency, failures) {
            out[keyPath: latency] = try CrossNodeLatency(group: group, members: latencyMembers, probes: latencyProbes,
                                                         rate: latencyRate).measure()
        }
        try phase(phases.storm, failures) {
            out.storms.append(try ClusterStorm(group: group, redis: redis, setup: setup,
                                               users: stormUsers, joinSeconds: stormSeconds).run())
        }
    }

    /// The nodes on a Redis Cluster of `redisClusterMasters` masters: CPU per op (each master's
    /// and the nodes') and cross-node latency.
    private func runOnRedisCluster(_ out: inout ClusterReport, _ failures: PhaseFailures) throws {
        let redisCluster = try RedisClusterProcesses(binary: redisServer, masters: redisClusterMasters)
        defer { redisCluster.stop() }
        let setup = "\(nodes) nodes + Redis Cluster (\(redisClusterMasters) master\(redisClusterMasters == 1 ? "" : "s"))"
        out.notes.append("node config: " + NodeGroup.configText(redisURL: redisCluster.url) + ". Redis Cluster: \(redisClusterMasters) "
                         + "redis-server \(Self.redisVersion(redisCluster.masters[0])) --save \"\" --appendonly no --cluster-enabled yes, "
                         + "no replicas, slots per master \(redisCluster.slotsPerMaster).")
        try phase(setup, failures) {
            let group = try NodeGroup(label: setup, count: nodes, binary: broker.path, redisURL: redisCluster.url)
            defer { group.stop() }
            guard group.waitHealthy(timeout: 10) else { throw StormError("the nodes never answered /healthz 200") }
            try phase("cost, \(setup)", failures) {
                out.costs += try OpCostRun(group: group, redis: redisCluster, setup: setup, sessions: costSessions, rounds: costRounds).measure()
            }
            if costOnly { return }
            try phase("cross-node latency, \(setup)", failures) {
                out.clusterLatency = try CrossNodeLatency(group: group, members: latencyMembers, probes: latencyProbes, rate: latencyRate).measure()
            }
        }
        out.failures = failures.list
        out.notes.append("machine at end: loadavg \(Self.loadAverage())")
        try out.result().finish(report)
    }

    /// Joins into a channel of `bigChannel` members on `group`.
    private func bigChannelJoins(_ group: NodeGroup, redis: RedisServerProcess) throws -> BigChannelJoinOutcome {
        try BigChannelJoin(group: group, redis: redis, setup: "\(nodes) nodes + Redis", members: bigChannel,
                           joinersPerRound: bigChannelJoiners, rounds: bigChannelRounds).run()
    }

    /// Runs one phase; an error is reported as "not measured" and the run goes on.
    private func phase(_ name: String, _ failures: PhaseFailures, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            print("cluster: \(name): NOT MEASURED: \(error)")
            failures.list.append("\(name): \(error)")
        }
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func redisVersion(_ redis: RedisServerProcess) -> String {
        let info = redis.command(["INFO", "server"]) ?? ""
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("redis_version:") }
        return line.map { String($0.dropFirst("redis_version:".count)) } ?? "?"
    }
}

/// The phases that failed, with why (reported as not measured).
final class PhaseFailures {
    var list: [String] = []
}
