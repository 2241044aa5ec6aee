import Foundation
import RollcallProtocol

/// What one batch of one op kind cost: broker CPU (every node added up) and Redis CPU, both
/// with the idle cost of the same seconds taken off, and Redis' own command statistics.
struct OpCost: Codable {
    /// e.g. `3 nodes + Redis`, `1 node + Redis`, `standalone`.
    let setup: String
    /// `join`, `setState` or `publish`.
    let op: String
    let ops: Int
    let failed: Int
    let seconds: Double
    /// Broker CPU seconds, idle cost removed.
    let brokerCPU: Double
    /// Share of the broker's CPU (idle included) spent in the kernel, from /proc/PID/stat ticks.
    var brokerSystemShare: Double?
    /// redis-server CPU seconds (schedstat), idle cost removed (nil without Redis); every
    /// master added up on a Redis Cluster.
    let redisCPU: Double?
    /// On a Redis Cluster: each master's CPU seconds, idle cost removed (the spread across masters).
    var redisCPUPerMaster: [Double]?
    /// `cmdstat_evalsha` (idle calls and usec removed): the scripts, including the commands they call.
    let evalshaCalls: Int?
    let evalshaUsec: Double?
    /// `cmdstat_hget` (idle removed): the nodes' reads before a script, and HGETs inside scripts.
    let hgetCalls: Int?
    let hgetUsec: Double?
    /// Every cmdstat except evalsha (idle removed): commands the nodes sent directly plus those
    /// the scripts called (Redis counts both), so evalsha + this is an upper bound.
    let otherUsec: Double?

    var brokerMicrosPerOp: Double { brokerCPU * 1e6 / Double(max(1, ops)) }
    var redisMicrosPerOp: Double? { redisCPU.map { $0 * 1e6 / Double(max(1, ops)) } }
    var evalshaMicrosPerOp: Double? { evalshaUsec.map { $0 / Double(max(1, ops)) } }
    /// Lower bound on Redis command time per op: the scripts alone.
    var commandMicrosLow: Double? { evalshaMicrosPerOp }
    /// Upper bound: scripts plus every other command (script-called ones counted twice).
    var commandMicrosHigh: Double? {
        guard let evalshaUsec, let otherUsec else { return nil }
        return (evalshaUsec + otherUsec) / Double(max(1, ops))
    }
}

/// The idle cost rates of a node group and its Redis (heartbeats, reaper), per second.
struct IdleRates {
    var broker = 0.0
    var redis = 0.0
    /// Each server's share of `redis`.
    var perServer: [Double] = []
    var stats = CommandStats()
    var seconds = 1.0

    /// Measures `seconds` of nothing happening (the clients are connected).
    static func measure(_ group: NodeGroup, _ redis: (any MeasuredRedis)?, seconds: Double) -> IdleRates {
        redis?.resetStats()
        let broker0 = group.cpuSeconds, redis0 = redis?.cpuSecondsPerServer ?? [], start = MonotonicSeconds.now
        usleep(UInt32(seconds * 1e6))
        let elapsed = MonotonicSeconds.now - start
        var rates = IdleRates(broker: (group.cpuSeconds - broker0) / elapsed, seconds: elapsed)
        if let redis {
            rates.perServer = zip(redis.cpuSecondsPerServer, redis0).map { ($0 - $1) / elapsed }
            rates.redis = rates.perServer.reduce(0, +)
            rates.stats = redis.commandStats()
        }
        return rates
    }

    /// Idle calls of `command` over `elapsed` seconds.
    func calls(_ command: String, over elapsed: Double) -> Double { Double(stats[command].calls) * elapsed / seconds }
    func usec(_ command: String, over elapsed: Double) -> Double { Double(stats[command].usec) * elapsed / seconds }
    func usecExcluding(_ skip: Set<String>, over elapsed: Double) -> Double {
        Double(stats.usec(excluding: skip)) * elapsed / seconds
    }
}

/// Runs a known number of `join`, `setState` and `publish` ops (each kind separately) from
/// sessions spread over a group's nodes, in channels of 10 members, and measures each batch.
struct OpCostRun {
    let group: NodeGroup
    let redis: (any MeasuredRedis)?
    let setup: String
    /// Sessions spread over the nodes.
    let sessions: Int
    let rounds: Int
    /// Members per channel.
    static let groupSize = 10

    func measure() throws -> [OpCost] {
        let spread = try SpreadSessions(urls: group.urls, count: sessions, label: "cost \(setup)", userId: { "cost-\($0)" })
        defer { spread.shutdown() }
        let idle = IdleRates.measure(group, redis, seconds: 1)
        print("cluster: cost \(setup): idle broker \(fmt(idle.broker * 1000)) ms/s, redis \(fmt(idle.redis * 1000)) ms/s")
        let message = String(repeating: "m", count: 100)
        func channel(_ round: Int, _ index: Int) -> String { "cost:\(round):g\(index / Self.groupSize)" }
        let joins = batch("join", spread, idle) { round, index in
            ["channel": .string(channel(round, index)), "presence": true, "messages": true]
        }
        let states = batch("setState", spread, idle) { round, index in
            ["channel": .string(channel(0, index)), "state": ["n": .string(String(round))]]
        }
        let publishes = batch("publish", spread, idle) { _, index in
            ["channel": .string(channel(0, index)), "message": .string(message)]
        }
        return [joins, states, publishes]
    }

    /// `rounds` rounds of one request per session (each round waits for its replies), then
    /// quiet; CPU and command statistics around the whole batch.
    private func batch(_ op: String, _ spread: SpreadSessions, _ idle: IdleRates,
                       _ arguments: @escaping (Int, Int) -> JSON) -> OpCost {
        redis?.resetStats()
        let broker0 = group.cpuSeconds, redis0 = redis?.cpuSecondsPerServer ?? [], start = MonotonicSeconds.now
        let times0 = group.cpuTimes
        var ok = 0, failed = 0
        let all = Array(0..<sessions)
        for round in 0..<rounds {
            let result = spread.requestAll(op, all, timeout: 30) { arguments(round, $0) }
            ok += result.ok
            failed += result.failed
        }
        spread.waitQuiet()
        let elapsed = MonotonicSeconds.now - start
        let broker = group.cpuSeconds - broker0 - idle.broker * elapsed
        let times = group.cpuTimes - times0
        var cost = OpCost(setup: setup, op: op, ops: ok, failed: failed, seconds: elapsed, brokerCPU: broker,
                          redisCPU: nil, evalshaCalls: nil, evalshaUsec: nil, hgetCalls: nil, hgetUsec: nil, otherUsec: nil)
        if let redis {
            let stats = redis.commandStats()
            let perServer = zip(zip(redis.cpuSecondsPerServer, redis0), idle.perServer).map { $0.0 - $0.1 - $1 * elapsed }
            cost = OpCost(setup: setup, op: op, ops: ok, failed: failed, seconds: elapsed, brokerCPU: broker,
                          redisCPU: perServer.reduce(0, +),
                          evalshaCalls: Int((Double(stats["evalsha"].calls) - idle.calls("evalsha", over: elapsed)).rounded()),
                          evalshaUsec: Double(stats["evalsha"].usec) - idle.usec("evalsha", over: elapsed),
                          hgetCalls: Int((Double(stats["hget"].calls) - idle.calls("hget", over: elapsed)).rounded()),
                          hgetUsec: Double(stats["hget"].usec) - idle.usec("hget", over: elapsed),
                          otherUsec: Double(stats.usec(excluding: ["evalsha", "info", "config"]))
                              - idle.usecExcluding(["evalsha", "info", "config"], over: elapsed))
            if perServer.count > 1 { cost.redisCPUPerMaster = perServer }
        }
        if times.total > 0 { cost.brokerSystemShare = times.system / times.total }
        print("cluster: cost \(setup) \(op): \(ok) ok, \(failed) failed in \(fmt(elapsed)) s; broker \(fmt(cost.brokerMicrosPerOp)) µs/op"
              + (cost.redisMicrosPerOp.map { ", redis \(fmt($0)) µs/op (schedstat)" } ?? "")
              + (cost.evalshaMicrosPerOp.map { ", evalsha \(fmt($0)) µs/op" } ?? ""))
        return cost
    }

    private func fmt(_ value: Double) -> String { BenchMetric.format(value) }
}
