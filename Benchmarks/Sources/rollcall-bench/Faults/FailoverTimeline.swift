import Foundation
import RollcallClient
import RollcallProtocol

/// kill -9 of the Redis master under 3 nodes on `redis+sentinel://` (a master, a replica,
/// 3 sentinels): per node `/readyz` 503 and the first `UNAVAILABLE`, the sentinels'
/// `+switch-master`, each node's `rollcall_redis_master_changes_total` going up (its first
/// command on the new master), `/readyz` 200 again, and when the rosters converged. Right
/// before the kill, `lateJoiners` more users join (answered ok, not waited for by the
/// replica): what the clients then see tells whether asynchronous replication lost them.
enum FailoverTimeline {
    static let members = 30
    static let lateJoiners = 5

    /// One run on a fresh Sentinel set and 3 fresh nodes.
    static func run(binary: String, redisServer: String) throws -> Timeline {
        let redis = try SentinelSet(binary: redisServer)
        defer { redis.stop() }
        let group = try NodeGroup(label: "failover", count: 3, binary: binary, redisURL: redis.url)
        defer { group.stop() }
        guard group.waitHealthy(timeout: 20) else { throw StormError("failover: the nodes never answered /readyz 200") }
        let channel = try WatchedChannel(group: group, channel: "failover:watched", memberCount: members)
        defer { channel.shutdown() }
        let late = try SpreadSessions(urls: group.urls, count: lateJoiners, label: "late joiners", userId: { "late-\($0)" })
        defer { late.shutdown() }
        let timeline = Timeline()
        let watch = try NodeWatch(group: group, timeline: timeline, trackMasterChanges: true)
        defer { watch.stop() }
        let oldMaster = redis.master.port
        let joined = late.requestAll("join", Array(0..<lateJoiners), timeout: 10) { _ in
            ["channel": .string(channel.channel), "presence": true, "messages": false]
        }
        timeline.faultNow()
        redis.master.kill9()
        watch.start()
        print("faults: failover: kill -9 of the master (port \(oldMaster)) right after \(joined.ok) late joins answered ok; "
              + "load \(Cluster.loadAverage())")
        timeline.expect("sentinel +switch-master")
        for node in 0..<3 { timeline.expect("node \(NodeWatch.label(node)): master_changes_total +1 (on the new master)") }
        watch.expectRecovery()
        let switchDeadline = timeline.faultAt + 30
        while MonotonicSeconds.now < switchDeadline, !(timeline.has("sentinel +switch-master") && watch.everyNodeReadyAgain) {
            watch.poll()
            if !timeline.has("sentinel +switch-master"), let port = redis.masterPort(), port != oldMaster {
                timeline.mark("sentinel +switch-master")
            }
            usleep(20_000)
        }
        timeline.note("sentinel logged +switch-master", redis.switchedMaster ? "yes" : "no")
        let lateUsers = Set((0..<lateJoiners).map { "late-\($0)" })
        try OutageTimeline.follow(timeline, watch: watch, channel: channel, deadline: MonotonicSeconds.now + 30,
                                  extraMembers: Set(lateUsers.prefix(joined.ok)))
        // What the late joiners' clients see now: still members by getOnlineUsers, or lost.
        let listed = channel.onlineUsers(asking: 0) ?? []
        timeline.note("late joins (answered ok just before the kill) still listed", "\(listed.intersection(lateUsers).count)/\(joined.ok)")
        timeline.note("load at the end", Cluster.loadAverage())
        return timeline
    }
}
