import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Chaos seed 98424072667413 on a Redis Cluster (session 45): a failover promoted a replica
/// that lacked seconds of writes Redis had acknowledged. The epoch was still there, so no node
/// noticed: members that had left stayed listed, a session Redis no longer knew answered every
/// join `UNAVAILABLE` for good, states and custom statuses went back. Here the same rollback
/// comes from one redis-server started again from an older snapshot (`SAVE`, then `SHUTDOWN
/// NOSAVE`). A node's beat finds its own last beats gone, gives the cluster a new epoch, and
/// every node treats it as a data loss (PROTOCOL §9): sessions close with 1012, the nodes
/// register again and hand over what Redis still lists for them, which then times out.
@Suite("Cluster after Redis went back in time", .serialized)
struct ClusterRollbackTests {
    @Test("Redis back on an older snapshot: every session closes with 1012, the lost state's members time out, and logins work again")
    func aRollbackIsTreatedAsADataLoss() throws {
        // A presence timeout of 2 s: the lost state's sessions, handed over, time out soon.
        let cluster = try ClusterProcess(config: BrokerProcess.merge(ServerAPIRequest.config, ["presence": ["timeoutSeconds": 2]]))
        let alice = try cluster.connect(node: 0)
        let aliceToken = try #require(try alice.login(userId: "alice")["resumeToken"]?.stringValue)
        #expect(try alice.join("lobby", state: ["mood": "snapshot"]).ok)
        #expect(try RedisWire.command(port: cluster.redisPort, ["SAVE"]) == "+OK")
        let savedAt = try redisTime(cluster)

        // Past the snapshot: bob joins, alice changes her state, and every node beats for more
        // than the node timeout (1 s), so the rollback takes that much of each node's beats.
        let bob = try cluster.session("bob", node: 1)
        #expect(try bob.join("lobby").ok)
        #expect(try alice.channelOp("setState", "lobby", ["state": stateJSON(["mood": "lost"])]).ok)
        #expect(everyNodeBeat(after: savedAt + 1500, in: cluster, timeout: 10))

        _ = try? RedisWire.command(port: cluster.redisPort, ["SHUTDOWN", "NOSAVE"])
        try cluster.redis.startAgainAfterShutdown()

        for (name, client) in [("alice", alice), ("bob", bob)] {
            let closed = try client.waitForClose(timeout: .seconds(15))
            #expect(closed.isClusterDataLost, "\(name)'s session closed as after a data loss: \(closed); \(cluster.describeNodes(logBytes: 4000))")
        }
        #expect(cluster.waitUntilFormed(timeout: 10), "every node registered again: \(cluster.describeNodes())")
        for node in 0..<3 {
            #expect((try cluster.node(node).metric("rollcall_cluster_data_losses_total") ?? 0) >= 1, "n\(node + 1) counted the loss")
        }

        // alice's session of the snapshot was handed over when n1 registered again: it times
        // out, and nobody stays listed in the lobby.
        var listed: [String] = []
        let emptied = eventually(timeout: 15) {
            guard let result = try? ServerAPIRequest.ok(port: cluster.node(2).port, "getChannels", [:]) else { return false }
            listed = (result["channels"]?.arrayValue ?? []).compactMap { $0["channel"]?.stringValue }
            return !listed.contains("lobby")
        }
        #expect(emptied, "the lobby of the lost state emptied; listed: \(listed); \(cluster.describeNodes(logBytes: 4000))")

        // PROTOCOL §9: after a loss old tokens no longer resume. alice's session is in the
        // snapshot Redis went back to; resumed, it would bring back what the loss left of it.
        let back = try cluster.connect(node: 2)
        let resumed = try back.login(userId: "alice", resumeToken: aliceToken)
        #expect(resumed.ok && resumed["resumed"]?.boolValue == false, "alice's old token after the rollback: \(resumed)")
        back.close()

        let carol = try cluster.session("carol", node: 0)
        #expect(try carol.join("lobby").ok)
        let snapshot = try carol.presenceEvent("snapshot", channel: "lobby")
        let members = (snapshot["snapshot"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue }
        #expect(members == ["carol"], "a login after the rollback sees only who is there: \(members)")
    }

    /// The other side of the threshold: Redis back on a snapshot a few milliseconds old (as a
    /// failover loses the last writes it had not replicated) is no rollback to act on. Nobody
    /// is closed, no node counts a loss, and the sessions go on.
    @Test("Redis back on a snapshot taken just before it stopped: no session closes, nothing is counted")
    func aShortLossIsNoRollback() throws {
        let cluster = try ClusterProcess(config: ServerAPIRequest.config)
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("lobby").ok)
        #expect(try RedisWire.command(port: cluster.redisPort, ["SAVE"]) == "+OK")
        _ = try? RedisWire.command(port: cluster.redisPort, ["SHUTDOWN", "NOSAVE"])
        try cluster.redis.startAgainAfterShutdown()
        let restartedAt = try redisTime(cluster)
        // Every node beats for two node timeouts after the restart: a rollback would have been
        // noticed by then.
        #expect(everyNodeBeat(after: restartedAt + 2000, in: cluster, timeout: 15), "\(cluster.describeNodes())")
        #expect(alice.closeInfo == nil, "alice's session goes on: \(String(describing: alice.closeInfo))")
        for node in 0..<3 {
            #expect((try cluster.node(node).metric("rollcall_cluster_data_losses_total") ?? -1) == 0, "n\(node + 1) counted no loss")
        }
        #expect(try alice.join("elsewhere").ok)
    }

    /// A loss shorter than a node timeout is not noticed as one, and can take a session's
    /// record with it while its node stays live (chaos seed 98424072667413). Before, nothing
    /// told the node: every change of the session was answered `UNAVAILABLE` for good.
    @Test("a session whose record Redis lost while its node stayed live: the change is refused once, then the connection closes with 1001")
    func aSessionRedisLostEndsOnItsNode() throws {
        let cluster = try ClusterProcess(nodeCount: 2)
        let alice = try cluster.session("alice", node: 0)
        let bob = try cluster.session("bob", node: 0)
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby").ok)
        let deleted = try RedisWire.command(port: cluster.redisPort, [
            "EVAL", "local n = 0 for _, key in ipairs(redis.call('KEYS', ARGV[1])) do "
                + "if redis.call('HGET', key, 'user') == 'alice' then redis.call('DEL', key) n = n + 1 end end return n",
            "0", cluster.keyPrefix + "{0}s:*",
        ])
        #expect(deleted == ":1", "alice's record deleted behind the node's back: \(deleted)")

        let refused = try alice.join("elsewhere")
        #expect(refused.errorCode == .unavailable, "\(refused)")
        let closed = try alice.waitForClose(timeout: .seconds(5))
        #expect(closed.code == 1001 && closed.reason == "session no longer in the cluster", "\(closed)")
        #expect((try cluster.node(0).metric("rollcall_cluster_sessions_lost_total") ?? 0) == 1)
        #expect(try bob.join("elsewhere").ok, "bob's session on the same node goes on")
    }

    /// Waits until Redis holds a beat later than `time` (Redis ms) of each of the three nodes.
    private func everyNodeBeat(after time: Int64, in cluster: ClusterProcess, timeout: TimeInterval) -> Bool {
        eventually(timeout: timeout) {
            (1...3).allSatisfy { node in
                let text = try? RedisWire.bulk(port: cluster.redisPort, ["HGET", cluster.keyPrefix + "{0}node:n\(node)", "lastHeartbeat"])
                return (text.flatMap { Int64($0) } ?? 0) > time
            }
        }
    }

    /// Redis' clock, in milliseconds.
    private func redisTime(_ cluster: ClusterProcess) throws -> Int64 {
        let reply = try RedisWire.command(port: cluster.redisPort, [
            "EVAL", "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)", "0",
        ])
        guard reply.hasPrefix(":"), let time = Int64(reply.dropFirst()) else { throw HarnessError("TIME answered \(reply)") }
        return time
    }
}
