import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A node killed and started again with the same `nodeId` before the others declared it dead
/// (PROTOCOL §9, issue #12): the start check, not the reaper, turns its previous incarnation's
/// sessions into holds with no node (`ClusterStartCheck`).
extension ClusterSessionTests {
    @Test("kill -9 then an immediate restart with the same nodeId: old sessions are held, not live; one resumes elsewhere, the other times out")
    func restartedBeforeDeclaredDead() throws {
        // nodeTimeoutSeconds 3: the restart (about 0.5 s) comes well before the death declaration.
        let presenceTimeout = 2.0, nodeTimeout = 3.0
        let cluster = try ClusterProcess(config: [
            "presence": ["timeoutSeconds": presenceTimeout], "cluster": ["nodeTimeoutSeconds": nodeTimeout],
        ])
        let bob = try cluster.session("bob", node: 0)
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let alice = try cluster.connect(node: 2)
        let login = try alice.login(userId: "alice")
        let token = try #require(login["resumeToken"]?.stringValue)
        let aliceSession = try #require(login["sessionId"]?.stringValue)
        #expect(try alice.join("lobby", state: ["k": "a"]).ok)
        let carol = try cluster.session("carol", node: 2)
        #expect(try carol.join("lobby").ok)
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "carol")

        let killedAt = Date()
        try cluster.restart(node: 2)
        let restartedAfter = Date().timeIntervalSince(killedAt)
        #expect(restartedAfter < nodeTimeout - 0.5, "restarted \(restartedAfter) s after the kill: before any death declaration")
        #expect(cluster.waitUntilFormed(timeout: 10), "\(cluster.describeNodes())")
        #expect(try cluster.node(2).metric("rollcall_sessions{state=\"live\"}") ?? 0 == 0, "the new incarnation owns nothing")
        #expect(cluster.heldSessionsInRedis() == 2, "alice and carol held in Redis")
        #expect(try RedisWire.bulk(port: cluster.redisPort, ["HGET", cluster.keyPrefix + "{0}s:" + aliceSession, "node"]) == "",
                "held with no node, not the restarted n3's")

        // Held, so no recipients: the message is kept for alice (and for carol, until she times out).
        let published = try bob.channelOp("publish", "lobby", ["message": "while away"])
        #expect(published["recipients"]?.numberValue?.intValue == 0, "held sessions are not recipients: \(published)")

        let again = try cluster.connect(node: 1)
        let resumed = try again.login(userId: "alice", resumeToken: token)
        #expect(resumed["resumed"]?.boolValue == true, "\(resumed)")
        #expect(resumed["sessionId"]?.stringValue == aliceSession)
        let snapshot = try again.presenceEvent("snapshot", channel: "lobby")
        #expect(snapshot["snapshot"]?.arrayValue?.compactMap { $0["userId"]?.stringValue } == ["alice", "bob", "carol"])
        #expect(try again.messageEvent(channel: "lobby")["message"] == "while away", "kept while held, delivered at the resume")

        let timeout = try bob.presenceEvent("timeout", channel: "lobby", publisher: "carol", timeout: .seconds(15))
        let timedOutAfter = Date().timeIntervalSince(killedAt)
        #expect(timedOutAfter >= presenceTimeout, "carol timed out \(timedOutAfter) s after the kill")
        #expect(timedOutAfter <= presenceTimeout + nodeTimeout + 1, "carol timed out \(timedOutAfter) s after the kill")
        #expect(timeout["occupancy"]?.numberValue?.intValue == 2)
        let others = try bob.presenceEventsAfterBarrier()
        #expect(others.isEmpty, "no leave/timeout/join about alice, who resumed: \(others)")
        #expect(try bob.channelOp("getState", "lobby", ["userId": "alice"])["state"] == ["k": "a"])
        #expect(try bob.channelOp("publish", "lobby", ["message": "hi"])["recipients"]?.numberValue?.intValue == 1, "alice, live on n2")
    }
}
