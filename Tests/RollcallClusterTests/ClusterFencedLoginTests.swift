import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 items 4 and 16 (fencing): a node the others declared dead changes nothing more in
/// Redis until it learns so (its next heartbeat). A node cut off from Redis logged users in just
/// before it learned it was declared dead, then forgot them without a word: those sessions
/// stayed in Redis as a live node's, for good. Now `session.start` and `session.claim` refuse a
/// node that is not among the live nodes (`fenced`), answered `UNAVAILABLE` with `retryAfterMs`.
@Suite("Cluster: a node declared dead is fenced")
struct ClusterFencedLoginTests {
    private func declareDead(_ node: String, in bed: ClusterBed) throws {
        // What the reap script does to a dead node, as far as the login is concerned.
        #expect(try bed.redis.command(["ZREM", "fence:nodes", node]) == ":1")
    }

    @Test("a login on a node that was just declared dead answers UNAVAILABLE and leaves no session in Redis")
    func aFencedNodeStartsNoSession() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "fence:")
        var armed = true
        // Unowned: the bed holds this closure, and a strong capture would leak it and its redis-server.
        bed.beforeStoreCall = { [unowned bed] node, commands in
            guard armed, node == 0,
                  commands.contains(where: { if case .script(let script, _) = $0 { script.name == "session.start" } else { false } })
            else { return }
            armed = false
            try? declareDeadNow("n1", bed)
        }
        let client = bed.open(on: 0)
        let reply = try bed.request(client, "login", ["userId": .string("alice")])
        #expect(reply["ok"]?.boolValue == false, "\(reply.compactString)")
        #expect(reply["error"]?.string("code") == "UNAVAILABLE", "\(reply.compactString)")
        #expect(reply["error"]?["retryAfterMs"]?.numberValue != nil, "\(reply.compactString)")
        #expect(try bed.redis.command(["EXISTS", "fence:us:5:alice"]) == ":0", "no session of alice was recorded")
        // Once the node's heartbeat put it back among the live nodes, logins work again.
        try bed.pump(until: { (try? bed.redis.command(["ZSCORE", "fence:nodes", "n1"])).map { !$0.hasPrefix("$-1") } == true },
                     what: "n1's next heartbeat")
        #expect(try bed.login("alice", on: 0).resumeToken.isEmpty == false)
    }

    @Test("a join or a leave for a session this node no longer owns answers UNAVAILABLE and changes nothing in Redis")
    func aFencedSessionChangesNoChannel() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "fence:")
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(alice, "join", ["channel": .string("kept")])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        // The session is handed over (as when the others declare its node dead) while its node
        // does not know yet: it has no node now.
        #expect(try bed.redis.command(["HSET", "fence:s:\(alice.sessionId)", "node", "n9"]) == ":0")

        let join = try bed.request(alice, "join", ["channel": .string("room")])
        #expect(join["error"]?.string("code") == "UNAVAILABLE", "\(join.compactString)")
        let listing = try bed.request(bob, "getOnlineUsers", ["channel": .string("room")])
        #expect(listing["result"]?["users"]?.arrayValue?.compactMap { $0.string("userId") } == ["bob"], "\(listing.compactString)")

        let leave = try bed.request(alice, "leave", ["channel": .string("kept")])
        #expect(leave["error"]?.string("code") == "UNAVAILABLE", "\(leave.compactString)")
        #expect(try bed.redis.command(["HEXISTS", "fence:c:m:4:kept:s", alice.sessionId]) == ":1",
                "the session is still a member of kept in Redis (its new owner decides)")
    }

    private func declareDeadNow(_ node: String, _ bed: ClusterBed) throws {
        try declareDead(node, in: bed)
    }
}
