import Foundation
import RollcallClient
import RollcallProtocol

/// What one join storm cost and how long it took to settle.
struct ClusterStormOutcome: Codable {
    let setup: String
    let users: Int
    let joinSeconds: Double
    var joinsOK = 0
    var joinsFailed = 0
    /// Seconds from the first join to the last join sent.
    var lastJoinAt = 0.0
    /// Seconds after the last join until every client's roster held every user (nil: never, within the wait).
    var convergedAfterLastJoin: Double?
    /// Seconds after the last join until the last presence event arrived anywhere.
    var lastEventAfterLastJoin = 0.0
    /// Broker CPU seconds over every node, and redis-server's (first join → quiet).
    var brokerCPU = 0.0
    var redisCPU: Double?
    var finalRosters = 0
    var onlineUsers = 0
}

/// `users` sessions spread over a group's nodes join one channel, paced over `joinSeconds`
/// (StormClient keeps each roster); measures CPU and convergence.
struct ClusterStorm {
    let group: NodeGroup
    let redis: RedisServerProcess?
    let setup: String
    let users: Int
    let joinSeconds: Double

    func run() throws -> ClusterStormOutcome {
        let channel = "storm:\(users):\(getpid())"
        var expected = UserSet(capacity: users)
        for n in 0..<users { expected.set(n, true) }
        let lines = StormLineCache(users: users, reader: UserNumberReader(prefix: StormPlan.userPrefix))
        let clients = (0..<users).map {
            StormClient(number: $0, expected: expected, expectedCount: users, lines: lines)
        }
        let lastEvent = ProbeTimes(capacity: 1)
        let spread = try SpreadSessions(urls: group.urls, count: users, label: "storm \(setup)",
                                        userId: StormPlan.userId) { index, connection in
            let client = clients[index]
            connection.onRawEvent = { line in
                client.receive(line)
                lastEvent.stamp(0)
            }
        }
        defer { spread.shutdown() }
        var outcome = ClusterStormOutcome(setup: setup, users: users, joinSeconds: joinSeconds)
        let counters = Counters()
        let broker0 = group.cpuSeconds, redis0 = redis?.cpuSeconds ?? 0
        let start = MonotonicSeconds.now
        var lastSent = start
        for index in 0..<users {
            let due = start + joinSeconds * Double(index) / Double(users)
            while MonotonicSeconds.now < due { usleep(UInt32(max(100, min(5000, (due - MonotonicSeconds.now) * 1e6)))) }
            spread.sessions[index].send(Op.join.rawValue, ["channel": .string(channel), "presence": true, "messages": false]) { reply in
                counters.add(reply.ok ? "ok" : "failed")
            }
            lastSent = MonotonicSeconds.now
        }
        outcome.lastJoinAt = lastSent - start
        print("cluster: storm \(setup): \(users) joins sent in \(BenchMetric.format(outcome.lastJoinAt)) s")
        let deadline = lastSent + 30
        while MonotonicSeconds.now < deadline {
            if counters["ok"] + counters["failed"] == users, clients.allSatisfy(\.isFinal) { break }
            usleep(20_000)
        }
        let times = clients.compactMap(\.reachedFinalAt)
        if times.count == users, let last = times.max() { outcome.convergedAfterLastJoin = last - lastSent }
        spread.waitQuiet(quiet: 0.5)
        outcome.brokerCPU = group.cpuSeconds - broker0
        outcome.redisCPU = redis.map { $0.cpuSeconds - redis0 }
        outcome.lastEventAfterLastJoin = (lastEvent[0] ?? lastSent) - lastSent
        outcome.joinsOK = counters["ok"]
        outcome.joinsFailed = counters["failed"]
        outcome.finalRosters = clients.filter(\.isFinal).count
        if let page = try? spread.sessions[0].call(Op.getOnlineUsers.rawValue, ["channel": .string(channel), "pageSize": 1000],
                                                    timeout: .seconds(10)) {
            outcome.onlineUsers = page["users"]?.arrayValue?.count ?? 0
        }
        print("cluster: storm \(setup): converged \(outcome.convergedAfterLastJoin.map { BenchMetric.format($0) } ?? "never") s "
              + "after the last join; broker CPU \(BenchMetric.format(outcome.brokerCPU)) s; "
              + "final rosters \(outcome.finalRosters)/\(users); getOnlineUsers \(outcome.onlineUsers)")
        return outcome
    }
}
