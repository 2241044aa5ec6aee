import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A failover that loses a user's slot's writes (Redis replicates asynchronously) leaves the
/// user's sessions members of channels in other slots with no record behind them: the reaper
/// hands over only what the user's slot lists, so nobody ever took them out and everyone saw
/// the user online for good (chaos on Redis Cluster, session 47). The node that had such a
/// session takes it out of the channels it knew it in — at the end it finds the record gone,
/// at the change Redis refused, and once back after a fence. And a node declared dead refuses
/// logins until it is back among the live nodes, instead of answering them and closing them
/// again at its next beat.
@Suite("Cluster: a session whose record a failover lost")
struct ClusterLostRecordTests {
    /// Two nodes laid out as on Redis Cluster (1024 key groups), alice on node 0 and bob on
    /// node 1 in a channel of another group than alice's.
    private struct Scene {
        let bed: ClusterBed
        let keys: ClusterKeys
        let room: String
        let alice: ClusterBed.Client
        let bob: ClusterBed.Client
    }

    private func scene(prefix: String, heartbeatSeconds: Double = 0.1) throws -> Scene {
        let (bed, keys) = try ClusterBed.withClusterKeyGroups(nodes: 2, prefix: prefix, heartbeatSeconds: heartbeatSeconds) {
            $0.presence.timeoutSeconds = 60
        }
        let userGroup = keys.userGroup(Name(unchecked: "alice"))
        #expect(userGroup != 0, "alice's slot is not the control slot")
        let room = (0..<1000).map { "room\($0)" }.first {
            keys.channel(ChannelKey(type: .message, name: Name(unchecked: $0))).groupNumber != userGroup
        }!
        let alice = try bed.member("alice", on: 0, of: room)
        let bob = try bed.member("bob", on: 1, of: room)
        return Scene(bed: bed, keys: keys, room: room, alice: alice, bob: bob)
    }

    /// Every key of alice's key group goes, as when its master failed over to a replica that
    /// had none of her writes.
    private func loseAlicesSlot(_ scene: Scene) throws {
        let tag = scene.keys.prefix + "{\(scene.keys.userGroup(Name(unchecked: "alice")))}"
        let script = "\"for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end return 1\""
        #expect(try scene.bed.redis.command(["EVAL", script, "0", tag + "*"]) == ":1")
        #expect(try scene.bed.redis.command(["EXISTS", scene.keys.user(Name(unchecked: "alice")).session(scene.alice.sessionId).record]) == ":0")
    }

    private func listed(_ scene: Scene) throws -> [String] {
        let reply = try scene.bed.request(scene.bob, "getOnlineUsers", ["channel": .string(scene.room)])
        return (reply["result"]?["users"]?.arrayValue ?? []).compactMap { $0.string("userId") }
    }

    private func departures(of user: String, in scene: Scene) -> [String] {
        scene.bob.events.filter { $0.string("event") == "presence" && ["leave", "timeout"].contains($0.string("type") ?? "") && $0.string("publisher") == user }
            .compactMap { $0.string("type") }
    }

    /// What `session.declareDead` does to node `nodeId`, at Redis' time (it is then reaped in every group).
    private func declareDead(_ nodeId: String, _ scene: Scene) throws {
        let keys = scene.keys
        let script = "\"local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) "
            + "redis.call('ZREM', ARGV[1], ARGV[5]) redis.call('SET', ARGV[2], now, 'PX', 60000) "
            + "redis.call('HSET', ARGV[3], ARGV[5], now) return redis.call('SADD', ARGV[4], ARGV[5])\""
        #expect(try scene.bed.redis.command(["EVAL", script, "0", keys.nodes, keys.deadMark(of: nodeId), keys.controlTag + "deaths",
                                             keys.reaping, nodeId]) == ":1")
    }

    @Test("a close whose end finds the record gone still takes the session out of its channels (leave)")
    func anEndThatFindsTheRecordGoneLeaves() throws {
        let scene = try scene(prefix: "lostend:")
        try loseAlicesSlot(scene)
        #expect(try listed(scene) == ["alice", "bob"], "before: alice is still a member of the room")
        scene.bed.disconnect(scene.alice, abnormally: false)
        try scene.bed.pump(until: { departures(of: "alice", in: scene) == ["leave"] }, what: "bob hears alice leave")
        #expect(try listed(scene) == ["bob"])
    }

    @Test("a join Redis refuses because the record is gone closes the connection with 1001 and takes the session out of the channels it was in (timeout)")
    func aRefusedChangeOfALostRecordEndsIt() throws {
        let scene = try scene(prefix: "lostjoin:")
        try loseAlicesSlot(scene)
        // A channel alice's session has no fence copy in: the join checks her record first.
        let other = (0..<1000).map { "hall\($0)" }.first {
            scene.keys.channel(ChannelKey(type: .message, name: Name(unchecked: $0))).groupNumber != scene.keys.userGroup(Name(unchecked: "alice"))
        }!
        let reply = try scene.bed.request(scene.alice, "join", ["channel": .string(other)])
        #expect(reply["error"]?.string("code") == "UNAVAILABLE" || scene.alice.closedWith != nil, "\(reply.compactString)")
        try scene.bed.pump(until: { scene.alice.closedWith != nil }, what: "alice's connection closed")
        #expect(scene.alice.closedWith == .shutdown)
        try scene.bed.pump(until: { departures(of: "alice", in: scene) == ["timeout"] }, what: "bob hears alice time out")
        #expect(try listed(scene) == ["bob"])
    }

    @Test("a node fenced by the others takes the sessions whose record is gone out of their channels once it is back (timeout); one the reaper handed over is left to the reaper")
    func aFencedNodeEndsItsLostRecordsOnceBack() throws {
        let scene = try scene(prefix: "lostfence:")
        let carol = try scene.bed.member("carol", on: 0, of: scene.room)
        try loseAlicesSlot(scene)
        try declareDead("n1", scene)
        try scene.bed.pump(until: { scene.alice.closedWith != nil && carol.closedWith != nil }, what: "node 0 fenced: its connections closed")
        #expect(scene.alice.closedWith == .shutdown)
        try scene.bed.pump(until: { departures(of: "alice", in: scene) == ["timeout"] }, what: "bob hears alice time out")
        #expect(try listed(scene) == ["bob", "carol"], "carol's session was handed over (held): it stays for its hold")
        #expect(departures(of: "carol", in: scene).isEmpty)
        #expect(scene.bed.brokers[0].metrics.clusterLostRecordsEnded == 1)
    }

    @Test("a node declared dead refuses logins (UNAVAILABLE) from its fence until a beat finds it live again; then they work")
    func aFencedNodeRefusesLoginsUntilBack() throws {
        // Beats 2 s apart: the fence and the next live beat are far enough apart to log in between.
        let scene = try scene(prefix: "lostlogin:", heartbeatSeconds: 2)
        try declareDead("n1", scene)
        try scene.bed.pump(until: { scene.alice.closedWith != nil }, timeout: 15, what: "node 0 fenced: alice's connection closed")
        let refused = try scene.bed.request(scene.bed.open(on: 0), "login", ["userId": .string("dave")])
        #expect(refused["error"]?.string("code") == "UNAVAILABLE", "\(refused.compactString)")
        #expect(refused["error"]?["retryAfterMs"]?.numberValue != nil)
        #expect(try scene.bed.redis.command(["ZCARD", scene.keys.user(Name(unchecked: "dave")).sessions]) == ":0", "no session of dave was recorded")
        var answered: JSON = .null
        let giveUpAt = Date().addingTimeInterval(20)
        while Date() < giveUpAt {
            answered = try scene.bed.request(scene.bed.open(on: 0), "login", ["userId": .string("dave")])
            if answered["ok"]?.boolValue == true { break }
            try? scene.bed.pump(until: { false }, timeout: 0.3, what: "a moment")
        }
        #expect(answered["ok"]?.boolValue == true, "a login on node 0 answered ok once it is back: \(answered.compactString)")
        #expect(answered["result"]?.string("sessionId")?.isEmpty == false)
    }
}
