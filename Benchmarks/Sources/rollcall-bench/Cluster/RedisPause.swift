import Foundation
import RollcallClient
import RollcallProtocol

/// SIGSTOP of redis-server for `pauseSeconds`, then SIGCONT: how long until every node
/// answers `/healthz` 200, and until every watcher's roster equals `getOnlineUsers` again.
struct RedisPauseOutcome: Codable {
    let pauseSeconds: Double
    let members: Int
    /// Members that closed their connection while Redis was stopped.
    let closedDuringPause: Int
    /// Seconds from SIGCONT until every node answered 200 (nil: not within the wait).
    var healthyAfterResume: Double?
    /// Seconds from SIGCONT until every watcher's roster equalled its node's getOnlineUsers
    /// (nil: not within the wait).
    var rostersAfterResume: Double?
    /// Seconds from SIGCONT until, moreover, that list was the true membership (the closed
    /// members gone; nil: not within the wait).
    var truthAfterResume: Double?
    /// Members still listed (by roster or getOnlineUsers, any node) that closed during the pause, at the end.
    var staleMembers: [String] = []
    /// /healthz statuses seen just before SIGCONT.
    var statusesWhilePaused: [Int] = []
}

enum RedisPause {
    /// One watcher per node plus `members` members spread over the nodes, in one channel;
    /// `closing` of the members close their connections while Redis is stopped.
    static func run(group: NodeGroup, redis: RedisServerProcess, members: Int, closing: Int,
                    pauseSeconds: Double) throws -> RedisPauseOutcome {
        let channel = "pause:watched"
        let nodeCount = group.nodes.count
        let rosters = (0..<nodeCount).map { _ in WatchedRoster(channel: channel) }
        var outcome = RedisPauseOutcome(pauseSeconds: pauseSeconds, members: members, closedDuringPause: closing)
        let watchers = try SpreadSessions(urls: group.urls, count: nodeCount, label: "pause watchers",
                                          userId: { "pause-watcher-\($0)" }) { index, connection in
            let roster = rosters[index]
            connection.onEvent = { event in roster.apply(event) }
        }
        defer { watchers.shutdown() }
        let memberSessions = try SpreadSessions(urls: group.urls, count: members, label: "pause members", userId: { "pause-\($0)" })
        defer { memberSessions.shutdown() }
        let join: (Int) -> JSON = { _ in ["channel": .string(channel), "presence": true, "messages": false] }
        _ = watchers.requestAll("join", Array(0..<nodeCount), timeout: 10, arguments: join)
        let joined = memberSessions.requestAll("join", Array(0..<members), timeout: 30, arguments: join)
        guard joined.failed == 0 else { throw StormError("pause: \(joined.failed) joins failed") }
        let everyone = members + nodeCount
        let ready = MonotonicSeconds.now + 10
        while rosters.contains(where: { $0.count < everyone }), MonotonicSeconds.now < ready { usleep(20_000) }

        redis.suspend()
        print("cluster: redis-server SIGSTOP for \(BenchMetric.format(pauseSeconds)) s; \(closing) members close meanwhile")
        let stoppedAt = MonotonicSeconds.now
        usleep(500_000)
        for index in 0..<closing { memberSessions.sessions[index].close(code: 1000) }
        while MonotonicSeconds.now < stoppedAt + pauseSeconds { usleep(20_000) }
        outcome.statusesWhilePaused = group.healthStatuses().map { $0 ?? 0 }
        redis.resume()
        let resumedAt = MonotonicSeconds.now
        let deadline = resumedAt + 30
        var expected = Set((0..<nodeCount).map { "pause-watcher-\($0)" })
        for index in closing..<members { expected.insert("pause-\(index)") }
        while MonotonicSeconds.now < deadline, outcome.truthAfterResume == nil {
            if outcome.healthyAfterResume == nil, group.healthStatuses().allSatisfy({ $0 == 200 }) {
                outcome.healthyAfterResume = MonotonicSeconds.now - resumedAt
            }
            if outcome.healthyAfterResume != nil, outcome.rostersAfterResume == nil,
               rostersMatch(watchers, rosters, channel: channel, expected: nil) {
                outcome.rostersAfterResume = MonotonicSeconds.now - resumedAt
            }
            if outcome.rostersAfterResume != nil, rostersMatch(watchers, rosters, channel: channel, expected: expected) {
                outcome.truthAfterResume = MonotonicSeconds.now - resumedAt
            }
            usleep(20_000)
        }
        if outcome.truthAfterResume == nil {
            for (index, roster) in rosters.enumerated() {
                let page = try? watchers.sessions[index].call(Op.getOnlineUsers.rawValue, ["channel": .string(channel), "pageSize": 1000],
                                                               timeout: .seconds(2))
                let listed = Set((page?["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })
                let mine = roster.userIds
                outcome.staleMembers = Array(Set(outcome.staleMembers).union(mine.union(listed).subtracting(expected))).sorted()
                print("cluster: redis back: watcher \(index): roster \(mine.count) (extra \(mine.subtracting(expected).sorted()), "
                      + "missing \(expected.subtracting(mine).sorted())), getOnlineUsers \(page == nil ? "no answer" : "\(listed.count)") "
                      + "(extra \(listed.subtracting(expected).sorted()), missing \(expected.subtracting(listed).sorted()))")
            }
        }
        print("cluster: redis back: healthz 200 everywhere after \(outcome.healthyAfterResume.map { BenchMetric.format($0) } ?? "—") s, "
              + "rosters = getOnlineUsers after \(outcome.rostersAfterResume.map { BenchMetric.format($0) } ?? "—") s, "
              + "= the true membership after \(outcome.truthAfterResume.map { BenchMetric.format($0) } ?? "—") s "
              + "(healthz while stopped: \(outcome.statusesWhilePaused))")
        return outcome
    }

    /// True when every watcher's roster equals `getOnlineUsers` asked on its own connection
    /// (and, when given, `expected`).
    private static func rostersMatch(_ watchers: SpreadSessions, _ rosters: [WatchedRoster], channel: String,
                                     expected: Set<String>?) -> Bool {
        for (index, roster) in rosters.enumerated() {
            guard expected == nil || roster.userIds == expected,
                  let page = try? watchers.sessions[index].call(Op.getOnlineUsers.rawValue, ["channel": .string(channel), "pageSize": 1000],
                                                                timeout: .seconds(1)) else { return false }
            let listed = Set((page["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })
            if listed != roster.userIds { return false }
        }
        return true
    }
}
