import Foundation
import RollcallClient
import RollcallProtocol

/// Redis out for `seconds` under 3 nodes with clients on each: SIGSTOP then SIGCONT, or
/// kill -9 then a restart on its append-only file (`appendfsync always`, so nothing
/// acknowledged is lost). Marks per node `/readyz` 503, the first `UNAVAILABLE`, Redis back,
/// `/readyz` 200 again, requests succeeding again, and when the rosters converged (every
/// watcher's roster = `getOnlineUsers` = the true membership); notes lost sessions.
enum OutageTimeline {
    /// How Redis goes away.
    enum Fault: String, CaseIterable {
        case stop = "SIGSTOP"
        case kill = "kill -9 + restart (AOF)"
    }

    static let members = 30
    /// Members that close their connections 0.5 s into the outage.
    static let closing = 3

    /// One run on a fresh Redis and 3 fresh nodes.
    static func run(_ fault: Fault, seconds: Double, binary: String, redisServer: String) throws -> Timeline {
        let redis = try RedisInstance(binary: redisServer, arguments: ["--save", "", "--appendonly", "yes", "--appendfsync", "always"])
        defer { redis.stop() }
        let group = try NodeGroup(label: "outage", count: 3, binary: binary, redisURL: redis.url)
        defer { group.stop() }
        guard group.waitHealthy(timeout: 15) else { throw StormError("outage: the nodes never answered /readyz 200") }
        let channel = try WatchedChannel(group: group, channel: "outage:watched", memberCount: members)
        defer { channel.shutdown() }
        let timeline = Timeline()
        let watch = try NodeWatch(group: group, timeline: timeline, trackMasterChanges: false)
        defer { watch.stop() }
        timeline.faultNow()
        switch fault {
        case .stop: redis.suspend()
        case .kill: redis.kill9()
        }
        watch.start()
        print("faults: outage: Redis \(fault.rawValue) for \(TimelineTable.format(seconds)) s under 3 nodes, "
              + "\(members) members and a watcher per node (\(closing) members close 0.5 s in); load \(Cluster.loadAverage())")
        timeline.expect("Redis back (SIGCONT / answers PING)")
        watch.expectRecovery()
        var closed = false
        while MonotonicSeconds.now < timeline.faultAt + seconds {
            watch.poll()
            if !closed, MonotonicSeconds.now >= timeline.faultAt + 0.5 {
                channel.closeMembers(closing)
                closed = true
            }
            usleep(20_000)
        }
        switch fault {
        case .stop: redis.resume()
        case .kill: try redis.start()
        }
        timeline.mark("Redis back (SIGCONT / answers PING)")
        try follow(timeline, watch: watch, channel: channel, deadline: MonotonicSeconds.now + 30)
        timeline.note("load at the end", Cluster.loadAverage())
        return timeline
    }

    /// After the fault healed: polls the nodes until each is ready again and the rosters
    /// converged (or `deadline`), stops the probes, and notes lost sessions and differences.
    static func follow(_ timeline: Timeline, watch: NodeWatch, channel: WatchedChannel, deadline: Double,
                       extraMembers: Set<String> = []) throws {
        let converged = "rosters = getOnlineUsers = the true membership, every node"
        timeline.expect(converged)
        while MonotonicSeconds.now < deadline {
            watch.poll()
            if watch.everyNodeReadyAgain, !timeline.has(converged),
               channel.converged(expected: channel.expectedUsers(extra: extraMembers)) {
                timeline.mark(converged)
            }
            if timeline.has(converged), watch.everyNodeReadyAgain, watch.requestsSettled { break }
            usleep(20_000)
        }
        watch.stop()
        let lost = channel.lost
        timeline.note("sessions closed by the broker (lost)", lost.isEmpty ? "none"
                      : "\(lost.count): " + lost.keys.sorted().prefix(5).map { "\($0) \(lost[$0]!)" }.joined(separator: ", "))
        if !timeline.has(converged) {
            let expected = channel.expectedUsers(extra: extraMembers)
            timeline.note("not converged", channel.differences(from: expected))
        }
        print("faults: " + timeline.marks.map { "\($0.name) \($0.seconds.map(TimelineTable.format) ?? "never")" }.joined(separator: ", "))
    }
}
