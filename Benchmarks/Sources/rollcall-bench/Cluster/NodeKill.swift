import Foundation
import RollcallClient
import RollcallProtocol

/// kill -9 of node A while `sessions` of its sessions sit in a channel watched from node B:
/// how long until B has seen the last `timeout`.
struct NodeKillOutcome: Codable {
    let sessions: Int
    /// Seconds from the SIGKILL to the last `timeout` B received (nil: not all arrived within the wait).
    var lastTimeoutAfterKill: Double?
    var timeoutsSeen = 0
    /// presence.timeoutSeconds + cluster.nodeTimeoutSeconds + 1 s.
    let expectedAtMost: Double
}

enum NodeKill {
    /// Runs on `group` (at least 2 nodes); node 0 is killed, node 1 watches.
    static func run(group: NodeGroup, sessions count: Int) throws -> NodeKillOutcome {
        let channel = "kill:watched"
        let expected = NodeGroup.presenceTimeoutSeconds + NodeGroup.nodeTimeoutSeconds + 1
        var outcome = NodeKillOutcome(sessions: count, expectedAtMost: expected)
        let roster = WatchedRoster(channel: channel)
        let watchers = try SpreadSessions(urls: [group.urls[1]], count: 1, label: "kill watcher", userId: { _ in "kill-watcher" }) {
            $1.onEvent = { event in roster.apply(event) }
        }
        defer { watchers.shutdown() }
        let victims = try SpreadSessions(urls: [group.urls[0]], count: count, label: "kill victims", userId: { "kill-\($0)" })
        defer { victims.shutdown() }
        _ = watchers.requestAll("join", [0], timeout: 10) { _ in ["channel": .string(channel), "presence": true, "messages": false] }
        let joined = victims.requestAll("join", Array(0..<count), timeout: 30) { _ in
            ["channel": .string(channel), "presence": true, "messages": false]
        }
        guard joined.failed == 0 else { throw StormError("kill: \(joined.failed) joins failed") }
        let ready = MonotonicSeconds.now + 10
        while roster.count < count + 1, MonotonicSeconds.now < ready { usleep(20_000) }
        guard roster.count == count + 1 else { throw StormError("kill: the watcher sees \(roster.count)/\(count + 1) members") }
        let killedAt = MonotonicSeconds.now
        group.killNode(0)
        print("cluster: kill -9 node A (pid \(group.pids[0])) with \(count) sessions; watching from node B")
        let deadline = killedAt + expected + 15
        while roster.count > 1, MonotonicSeconds.now < deadline { usleep(10_000) }
        let tally = roster.timeoutTally
        outcome.timeoutsSeen = tally.count
        if roster.count == 1, tally.count == count, let last = tally.last { outcome.lastTimeoutAfterKill = last - killedAt }
        print("cluster: kill: \(tally.count)/\(count) timeouts; the last \(outcome.lastTimeoutAfterKill.map { BenchMetric.format($0) } ?? "—") s after kill -9")
        return outcome
    }
}
