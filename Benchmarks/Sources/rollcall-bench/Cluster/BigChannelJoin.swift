import Foundation
import RollcallProtocol

/// What joins into (and leaves from) one big presence channel cost (issue 30 item 4: "a join
/// into a 1000-member channel must not rebuild the snapshot in Redis' one thread every time").
struct BigChannelJoinOutcome: Codable {
    let setup: String
    /// Members the channel was filled with before the measured joins.
    let members: Int
    /// New sessions that join (then leave) in each round, all at once.
    let joinersPerRound: Int
    let rounds: Int
    var joins = 0
    var joinsFailed = 0
    /// Seconds from each round's first join sent to its last reply, added up.
    var joinSeconds = 0.0
    /// CPU of each join window (first join sent → the joiners quiet: snapshots delivered), idle removed.
    var joinRedisCPU = 0.0
    var joinBrokerCPU = 0.0
    /// `cmdstat_evalsha` of the join windows: scripts run and their time (wall clock in Redis).
    var joinEvalshaCalls = 0
    var joinEvalshaUsec = 0.0
    /// Bytes the joiners received per join (the reply and its snapshot).
    var bytesPerJoin = 0.0
    var leaves = 0
    var leavesFailed = 0
    var leaveSeconds = 0.0
    var leaveRedisCPU = 0.0
    var leaveBrokerCPU = 0.0

    var joinsPerSecond: Double { Double(joins) / max(joinSeconds, 1e-9) }
    var redisMicrosPerJoin: Double { joinRedisCPU * 1e6 / Double(max(1, joins)) }
    var brokerMicrosPerJoin: Double { joinBrokerCPU * 1e6 / Double(max(1, joins)) }
    var evalshaMicrosPerJoin: Double { joinEvalshaUsec / Double(max(1, joins)) }
    var leavesPerSecond: Double { Double(leaves) / max(leaveSeconds, 1e-9) }
    var redisMicrosPerLeave: Double { leaveRedisCPU * 1e6 / Double(max(1, leaves)) }
    var brokerMicrosPerLeave: Double { leaveBrokerCPU * 1e6 / Double(max(1, leaves)) }
}

/// Fills one channel with `members` sessions spread over the nodes (presence on), then
/// `rounds` times: `joinersPerRound` new sessions join it at once (each gets the snapshot of
/// the whole roster), then leave at once, so that its size stays between `members` and
/// `members + joinersPerRound`. Joins and leaves are measured apart (CPU as the cost batches
/// measure it). A join and a leave of the same user within one interval leave nothing for the
/// interval flush to announce, so the flushes do not cost a broadcast to the whole channel.
struct BigChannelJoin {
    let group: NodeGroup
    let redis: RedisServerProcess
    let setup: String
    let members: Int
    let joinersPerRound: Int
    let rounds: Int

    func run() throws -> BigChannelJoinOutcome {
        let channel = "big:\(members):\(getpid())"
        let join: JSON = ["channel": .string(channel), "presence": true, "messages": false]
        let leave: JSON = ["channel": .string(channel)]
        let fill = try SpreadSessions(urls: group.urls, count: members, label: "big channel \(setup)", userId: { "big-\($0)" })
        defer { fill.shutdown() }
        for start in stride(from: 0, to: members, by: 100) {
            let chunk = Array(start..<min(members, start + 100))
            let result = fill.requestAll(Op.join.rawValue, chunk, timeout: 60) { _ in join }
            guard result.ok == chunk.count else { throw StormError("big channel \(setup): \(result.failed) fill joins failed") }
        }
        // Past the interval flush of the last fill joins.
        fill.waitQuiet(quiet: 1.5, timeout: 30)
        let joiners = try SpreadSessions(urls: group.urls, count: joinersPerRound, label: "big channel joiners \(setup)",
                                         userId: { "big-joiner-\($0)" })
        defer { joiners.shutdown() }
        let idle = IdleRates.measure(group, redis, seconds: 1)
        var outcome = BigChannelJoinOutcome(setup: setup, members: members, joinersPerRound: joinersPerRound, rounds: rounds)
        let all = Array(0..<joinersPerRound)
        var joinerBytes = 0
        for _ in 0..<rounds {
            redis.command(["CONFIG", "RESETSTAT"])
            let bytes0 = joiners.bytesReceived
            let joined = window(joiners, idle) { joiners.requestAll(Op.join.rawValue, all, timeout: 30) { _ in join } }
            let stats = CommandStats(info: redis.command(["INFO", "commandstats"]) ?? "")
            joinerBytes += joiners.bytesReceived - bytes0
            outcome.joins += joined.result.ok
            outcome.joinsFailed += joined.result.failed
            outcome.joinSeconds += joined.answeredIn
            outcome.joinRedisCPU += joined.redisCPU
            outcome.joinBrokerCPU += joined.brokerCPU
            outcome.joinEvalshaCalls += stats["evalsha"].calls - Int(idle.calls("evalsha", over: joined.elapsed).rounded())
            outcome.joinEvalshaUsec += Double(stats["evalsha"].usec) - idle.usec("evalsha", over: joined.elapsed)
            let left = window(joiners, idle) { joiners.requestAll(Op.leave.rawValue, all, timeout: 30) { _ in leave } }
            outcome.leaves += left.result.ok
            outcome.leavesFailed += left.result.failed
            outcome.leaveSeconds += left.answeredIn
            outcome.leaveRedisCPU += left.redisCPU
            outcome.leaveBrokerCPU += left.brokerCPU
        }
        outcome.bytesPerJoin = Double(joinerBytes) / Double(max(1, outcome.joins))
        let f = BenchMetric.format
        print("cluster: big channel \(setup): \(outcome.joins) joins (\(outcome.joinsFailed) failed) into \(members) members: "
              + "\(f(outcome.joinsPerSecond))/s, redis \(f(outcome.redisMicrosPerJoin)) µs/join, nodes \(f(outcome.brokerMicrosPerJoin)) µs/join, "
              + "evalsha \(f(outcome.evalshaMicrosPerJoin)) µs/join, \(f(outcome.bytesPerJoin)) B/join; "
              + "leaves \(f(outcome.leavesPerSecond))/s, redis \(f(outcome.redisMicrosPerLeave)) µs/leave")
        return outcome
    }

    /// One measured window: the requests `send` makes, until every reply and then until the
    /// sessions are quiet (their snapshots delivered).
    private func window(_ sessions: SpreadSessions, _ idle: IdleRates,
                        _ send: () -> (ok: Int, failed: Int)) -> (result: (ok: Int, failed: Int), answeredIn: Double,
                                                                  elapsed: Double, redisCPU: Double, brokerCPU: Double) {
        let broker0 = group.cpuSeconds, redis0 = redis.cpuSeconds, start = MonotonicSeconds.now
        let result = send()
        let answeredIn = MonotonicSeconds.now - start
        sessions.waitQuiet(quiet: 0.2)
        let elapsed = MonotonicSeconds.now - start
        return (result, answeredIn, elapsed, redis.cpuSeconds - redis0 - idle.redis * elapsed,
                group.cpuSeconds - broker0 - idle.broker * elapsed)
    }
}
