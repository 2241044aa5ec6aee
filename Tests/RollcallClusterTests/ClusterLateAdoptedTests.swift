import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A node hears `adopted <id>` when another node claims a session it held. The message can
/// come late: held back while the node may have been declared dead, or from a claim that was
/// cancelled (its answer lost) after which the session was claimed again on this very node.
/// The node then forgot the session it had just resumed and closed its connection with 1001,
/// while Redis kept it live there for good: its user stayed listed in its channels with no
/// session (chaos seeds 184026005883807, 218644873678051). The message now names the token
/// that was claimed, and a copy resumed since under a new token is kept.
@Suite("Cluster: a late adopted message does not end a session resumed since")
struct ClusterLateAdoptedTests {
    @Test("a claim on node 1 whose answer was lost is cancelled; the session resumes on node 0, which hears the adopted message only then and keeps the session")
    func aLateAdoptedMessageIsIgnored() throws {
        let prefix = "lateadopted:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let alice = try bed.member("alice", on: 0)
        _ = try bed.member("bob", on: 1)
        try bed.holdInRedis(alice)
        let sessionKey = prefix + "{0}s:" + alice.sessionId

        // Node 0 hears its control messages late; node 1's claim runs but its answer is lost.
        bed.delaysStoreMessage = { index, payload in index == 0 && payload.starts(with: Array("adopted ".utf8)) }
        bed.failFirstCall(running: "session.claim", on: 1, answerLost: true)
        let attempt = bed.open(on: 1)
        let refused = try bed.request(attempt, "login", ["userId": .string("alice"), "resumeToken": .string(alice.resumeToken)])
        #expect(refused["error"]?.string("code") == "UNAVAILABLE", "\(refused.compactString)")
        try bed.pump(until: { (try? bed.redis.command(["HSTRLEN", sessionKey, "node"])) == ":0" }, what: "the claim cancelled: held with no node")

        let back = try bed.login("alice", on: 0, ["resumeToken": .string(alice.resumeToken)])
        #expect(back.resumed, "alice resumed on node 0")
        bed.releaseHeldMessages(node: 0)
        bed.delaysStoreMessage = nil
        #expect(try bed.request(back, "setState", ["channel": .string("room"), "state": .object(JSONObject([("k", .string("v"))]))])["ok"]?.boolValue == true)
        #expect(back.closedWith == nil, "the session resumed on node 0 is still served: \(String(describing: back.closedWith))")
        #expect(try bed.redis.command(["SISMEMBER", prefix + "{0}ns:n1", alice.sessionId]) == ":1", "Redis has it on node 0 (n1)")
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true)
    }

    @Test("a held session whose adopted message never comes keeps at most maxMessagesAwaitingAClaim of its channels' messages")
    func aLostAdoptedMessageKeepsABoundedBacklog() throws {
        let prefix = "lostadopted:"
        var configuration = Configuration()
        configuration.limits.requestsPerSecond = 100_000
        configuration.limits.requestBurst = 100_000
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix)
        let alice = try bed.member("alice", on: 0)
        let bob = try bed.member("bob", on: 1)
        try bed.holdInRedis(alice)
        // Alice resumes on node 1; node 0 never hears that she was adopted.
        bed.delaysStoreMessage = { index, payload in index == 0 && payload.starts(with: Array("adopted ".utf8)) }
        let back = try bed.login("alice", on: 1, ["resumeToken": .string(alice.resumeToken)])
        #expect(back.resumed)
        let limit = ClusterPresence.maxMessagesAwaitingAClaim
        for index in 0...limit {
            #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .int(index)])["ok"]?.boolValue == true)
        }
        try bed.pump(until: { back.events.filter { $0.string("event") == "message" }.count > limit }, what: "every message at node 1")
        let session = try #require(bed.brokers[0].directory.session(id: alice.sessionId))
        let presence = try #require(bed.brokers[0].engines.presence as? ClusterPresence)
        let kept = try #require(presence.messagesAfterSnapshots[session.number])
        #expect(kept.count == limit, "the backlog stops at the bound")
    }
}
