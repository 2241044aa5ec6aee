import Foundation
import RollcallClient
import RollcallProtocol

/// kill -9 of node A holding `sessions` sessions spread over channels with presence, each
/// channel watched by one session on node B: the first and the last `timeout` B delivers,
/// and when B's `getInfo` and `getOnlineUsers` stop counting them. Target (PROTOCOL §9 "Under
/// faults"): every one times out within presence.timeoutSeconds + nodeTimeoutSeconds + 5 s.
enum KillTimeline {
    /// Members per channel: below `maxInstantEvents` − hysteresis, so every `timeout` is an
    /// event of its own (a larger channel goes to interval mode and batches them).
    static let membersPerChannel = 80
    /// Joins sent at once before waiting for their replies.
    static let joinBatch = 250

    /// The contract's bound on the last `timeout`, in seconds from the kill.
    static var target: Double { NodeGroup.presenceTimeoutSeconds + NodeGroup.nodeTimeoutSeconds + 5 }

    /// One run on a fresh pair of nodes and a fresh Redis.
    static func run(binary: String, redisServer: String, sessions count: Int, apiKey: String) throws -> Timeline {
        let redis = try RedisServerProcess(binary: redisServer)
        defer { redis.stop() }
        let group = try NodeGroup(label: "kill", count: 2, binary: binary, redisURL: redis.url, apiKey: apiKey)
        defer { group.stop() }
        guard group.waitHealthy(timeout: 15) else { throw StormError("kill: the nodes never answered /readyz 200") }
        let channels = (count + membersPerChannel - 1) / membersPerChannel
        let rosters = (0..<channels).map { WatchedRoster(channel: "kill:\($0)") }
        let watchers = try SpreadSessions(urls: [group.urls[1]], count: channels, label: "kill watchers",
                                          userId: { "watcher-\($0)" }) { index, connection in
            connection.onEvent = { rosters[index].apply($0) }
        }
        defer { watchers.shutdown() }
        let join: (Int) -> JSON = { ["channel": .string("kill:\($0 % channels)"), "presence": true, "messages": false] }
        guard watchers.requestAll("join", Array(0..<channels), timeout: 30, arguments: join).failed == 0 else {
            throw StormError("kill: watcher joins failed")
        }
        let loginStart = MonotonicSeconds.now
        let victims = try SpreadSessions(urls: [group.urls[0]], count: count, label: "kill victims", userId: { "victim-\($0)" })
        defer { victims.shutdown() }
        // In batches: 10,000 joins sent at once queue 10,000 scripts ahead of node A's heartbeat
        // on its link, and with nodeTimeoutSeconds 1 its peers declare it dead (seen: 2 of 10
        // thousand joins answered ok, then A fenced).
        var joinedOK = 0
        for start in stride(from: 0, to: count, by: joinBatch) {
            let batch = Array(start..<min(start + joinBatch, count))
            let joined = victims.requestAll("join", batch, timeout: 30, arguments: join)
            joinedOK += joined.ok
            guard joined.failed == 0, joined.ok == batch.count else {
                throw StormError("kill: \(joinedOK)/\(count) joins answered ok (a batch of \(batch.count) got \(joined.failed) errors)")
            }
        }
        let everyone = count + channels
        let ready = MonotonicSeconds.now + 60
        while rosters.reduce(0, { $0 + $1.count }) < everyone, MonotonicSeconds.now < ready { usleep(50_000) }
        let listed = rosters.reduce(0) { $0 + $1.count }
        guard listed == everyone else { throw StormError("kill: the watchers list \(listed)/\(everyone)") }
        let api = LoopbackHTTP(url: group.urls[1])!
        guard sessionsCounted(api, apiKey) == everyone else {
            throw StormError("kill: getInfo on B counts \(sessionsCounted(api, apiKey).map(String.init) ?? "nothing"), not \(everyone)")
        }
        print("faults: kill: \(count) sessions on A in \(channels) channels (logged in and joined in "
              + "\(String(format: "%.1f", MonotonicSeconds.now - loginStart)) s), one watcher per channel on B; load \(Cluster.loadAverage())")

        let timeline = Timeline()
        group.killNode(0)
        for name in ["first timeout on B", "last timeout on B", "getInfo on B counts only B's sessions",
                     "getOnlineUsers lists only the watcher, every channel"] { timeline.expect(name) }
        let deadline = timeline.faultAt + target + 20
        var listingChecked = false
        while MonotonicSeconds.now < deadline {
            if let first = rosters.compactMap(\.firstTimeoutAt).min() { timeline.mark("first timeout on B", at: first) }
            let seen = rosters.reduce(0) { $0 + $1.timeoutTally.count }
            if seen == count, let last = rosters.compactMap(\.timeoutTally.last).max() { timeline.mark("last timeout on B", at: last) }
            if !timeline.has("getInfo on B counts only B's sessions"), sessionsCounted(api, apiKey) == channels {
                timeline.mark("getInfo on B counts only B's sessions")
            }
            if timeline.has("last timeout on B"), !listingChecked {
                if onlyWatchersListed(watchers, channels: channels) {
                    timeline.mark("getOnlineUsers lists only the watcher, every channel")
                    listingChecked = true
                }
            }
            if listingChecked, timeline.has("getInfo on B counts only B's sessions") { break }
            usleep(20_000)
        }
        let seen = rosters.reduce(0) { $0 + $1.timeoutTally.count }
        let left = rosters.reduce(0) { $0 + $1.count } - channels
        timeline.note("timeouts seen on B", "\(seen)/\(count)")
        timeline.note("still listed by the watchers at the end", "\(left)")
        let last = timeline.marks.first { $0.name == "last timeout on B" }?.seconds ?? nil
        timeline.note("target", "last timeout ≤ \(TimelineTable.format(target)) s: "
                      + (last.map { $0 <= target ? "met" : "MISSED" } ?? "MISSED (not every session timed out)"))
        timeline.note("load at the end", Cluster.loadAverage())
        print("faults: kill: \(seen)/\(count) timeouts; " + timeline.marks.map { "\($0.name) \($0.seconds.map(TimelineTable.format) ?? "never")" }.joined(separator: ", "))
        return timeline
    }

    /// `sessions` of the server API's `getInfo` on one node (nil: no answer).
    static func sessionsCounted(_ api: LoopbackHTTP, _ key: String) -> Int? {
        guard let reply = api.post("/api/v1/getInfo", body: "{}", bearer: key), reply.status == 200,
              let object = try? JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any],
              let result = object["result"] as? [String: Any] else { return nil }
        return (result["sessions"] as? NSNumber)?.intValue
    }

    /// True when `getOnlineUsers` of every channel, asked by its watcher, lists only that watcher.
    private static func onlyWatchersListed(_ watchers: SpreadSessions, channels: Int) -> Bool {
        let counters = Counters()
        for index in 0..<channels {
            watchers.sessions[index].send(Op.getOnlineUsers.rawValue, ["channel": .string("kill:\(index)"), "pageSize": 1000]) { reply in
                let users = (reply.result["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue }
                counters.add(reply.ok && users == ["watcher-\(index)"] ? "only" : "more")
            }
        }
        let deadline = MonotonicSeconds.now + 5
        while counters["only"] + counters["more"] < channels, MonotonicSeconds.now < deadline { usleep(5_000) }
        return counters["only"] == channels
    }
}
