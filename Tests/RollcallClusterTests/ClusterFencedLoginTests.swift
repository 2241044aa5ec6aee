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
        // What `session.declareDead` does to a dead node, as far as the login is concerned.
        #expect(try bed.redis.command(["ZREM", "fence:{0}nodes", node]) == ":1")
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
        #expect(try bed.redis.command(["EXISTS", "fence:{0}us:5:alice"]) == ":0", "no session of alice was recorded")
        // Once the node's heartbeat put it back among the live nodes, logins work again.
        try bed.pump(until: { (try? bed.redis.command(["ZSCORE", "fence:{0}nodes", "n1"])).map { !$0.hasPrefix("$-1") } == true },
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
        // does not know yet: it has another node now, in its record and in its fence copy in
        // the channel it joined (what a claim's refence writes).
        #expect(try bed.redis.command(["HSET", "fence:{0}s:\(alice.sessionId)", "node", "n9"]) == ":0")
        #expect(try bed.redis.command(["HSET", "fence:{0}c:m:4:kept:o", alice.sessionId, "n9"]) == ":0")

        let join = try bed.request(alice, "join", ["channel": .string("room")])
        #expect(join["error"]?.string("code") == "UNAVAILABLE", "\(join.compactString)")
        let listing = try bed.request(bob, "getOnlineUsers", ["channel": .string("room")])
        #expect(listing["result"]?["users"]?.arrayValue?.compactMap { $0.string("userId") } == ["bob"], "\(listing.compactString)")

        // The refused join made the node read alice's record: it names n9, so her connection
        // here closes with 1001 (session 45) and a leave sent after that gets no answer.
        let leave = try bed.request(alice, "leave", ["channel": .string("kept")])
        #expect(leave["error"]?.string("code") == "UNAVAILABLE" || alice.closedWith == .shutdown, "\(leave.compactString)")
        #expect(try bed.redis.command(["HEXISTS", "fence:{0}c:m:4:kept:s", alice.sessionId]) == ":1",
                "the session is still a member of kept in Redis (its new owner decides)")
        try bed.pump(until: { alice.closedWith != nil }, what: "alice's connection closed: her session is n9's")
        #expect(alice.closedWith == .shutdown)
    }

    @Test("a setState for a joined session that was handed over and timed out answers UNAVAILABLE, not pending")
    func aFencedSessionIsNotAnsweredPending() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "fence:")
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        // What the reaper (`session.reapGroup`) does to the session of a node declared dead (orphan), with
        // its hold already over: held with no node; a reaper then times it out and takes alice
        // out of the channel. Alice's node has not learned any of it yet.
        let record = "fence:{0}s:\(alice.sessionId)"
        #expect(try bed.redis.command(["HSET", record, "node", "\"\"", "heldUntil", "1"]) == ":0")
        #expect(try bed.redis.command(["SREM", "fence:{0}ns:n1", alice.sessionId]) == ":1")
        #expect(try bed.redis.command(["ZADD", "fence:{0}held", "1", alice.sessionId]) == ":1")
        try bed.pump(until: {
            (try? bed.redis.command(["EXISTS", record])) == ":0" && (try? bed.redis.command(["HEXISTS", "fence:{0}c:m:4:room:st", "alice"])) == ":0"
        }, what: "the handed-over session timed out and left room")

        // Before: the node read "not a member" and answered `pending: true`, as if the session
        // were still its own and had never joined (chaos seeds 116437088078858, 124579947494685).
        let set = try bed.request(alice, "setState", ["channel": .string("room"), "state": .object(["mood": .string("busy")])])
        #expect(set["error"]?.string("code") == "UNAVAILABLE", "\(set.compactString)")
        #expect(set["error"]?["retryAfterMs"]?.numberValue != nil, "\(set.compactString)")
        let remove = try bed.request(alice, "removeState", ["channel": .string("room"), "keys": .array([.string("mood")])])
        #expect(remove["error"]?.string("code") == "UNAVAILABLE" || alice.closedWith == .shutdown, "\(remove.compactString)")
        try bed.pump(until: { alice.closedWith != nil }, what: "alice's connection closed: her session is gone from Redis")
        #expect(alice.closedWith == .shutdown)
        #expect(try bed.redis.command(["HEXISTS", "fence:{0}c:m:4:room:st", "alice"]) == ":0", "alice is not made a member again")
    }

    @Test("a setState before joining, on a node that owns the session, still holds the state for the join")
    func pendingStateOnAnOwnedSession() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "fence:")
        let alice = try bed.login("alice", on: 0)
        let set = try bed.request(alice, "setState", ["channel": .string("room"), "state": .object(["mood": .string("busy")])])
        #expect(set["result"]?["pending"]?.boolValue == true, "\(set.compactString)")
        let join = try bed.request(alice, "join", ["channel": .string("room")])
        #expect(join["ok"]?.boolValue == true, "\(join.compactString)")
        #expect(try bed.redis.command(["HSTRLEN", "fence:{0}c:m:4:room:st", "alice"]) == ":15", "alice joined with {\"mood\":\"busy\"}")
    }

    private func declareDeadNow(_ node: String, _ bed: ClusterBed) throws {
        try declareDead(node, in: bed)
    }
}
