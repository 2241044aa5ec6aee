import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallRedisEngine
import RollcallTestSupport
import Testing

/// Session 48: three nodes on a Redis Cluster of their own; a master that does not serve the
/// control slot is killed and started again empty before the cluster could fail it over
/// (`cluster-node-timeout` 5 s), so it comes back master of its slots with none of its keys:
/// a third of the cluster's data gone while the epoch and the nodes' beats stay. Before, no
/// node noticed (channels of the lost groups without their members, for good). Each node's
/// group beat finds its beats in that master's groups gone; the epoch is renewed and every
/// node handles it as a data loss (PROTOCOL §9): every client is closed with 1012, every node
/// counts it, and the cluster serves again.
@Suite("Cluster on a Redis Cluster: one master restarted empty", .serialized)
struct ClusterShareLossTests {
    @Test("a master that is not the control slot's comes back empty: every node notices within seconds, closes its sessions with 1012 and serves again")
    func aMasterRestartedEmptyIsADataLoss() throws {
        let redisCluster = try RedisClusterNodes(masters: 3, replicasPerMaster: 1, nodeTimeoutMilliseconds: 5000)
        let cluster = try ClusterProcess(config: ["cluster": ["nodeTimeoutSeconds": 1.0]], redisCluster: redisCluster)
        let alice = try cluster.session("alice", node: 0)
        let bob = try cluster.session("bob", node: 1)
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby").ok)

        let control = try redisCluster.masterPort(servingKey: cluster.keyPrefix + "{0}")
        let victim = try #require(try redisCluster.masterPorts().first { $0 != control }, "a master other than the control slot's")
        // The group the nodes beat in on that master (the lowest it serves), once every node
        // beat there for more than a node timeout (1 s): each then compares its beats there
        // with what Redis holds.
        let group = try #require((1..<KeyGroups.clusterCount).first { (try? redisCluster.masterPort(servingKey: cluster.keyPrefix + "{\($0)}")) == victim })
        let beats = "local t = {} for _, k in ipairs(redis.call('KEYS', ARGV[1])) do t[#t + 1] = redis.call('GET', k) end return table.concat(t, ',')"
        let pattern = cluster.keyPrefix + "{\(group)}gb:*"
        var seen: [String] = []
        var firstSeen: Date?
        #expect(eventually(timeout: 10) {
            guard let now = try? redisCluster.command(port: victim, ["EVAL", beats, "0", pattern]), now.split(separator: ",").count == 3 else { return false }
            if seen.last != now { seen.append(now) }
            if firstSeen == nil { firstSeen = Date() }
            return seen.count >= 3 && Date().timeIntervalSince(firstSeen!) >= 1.5
        }, "every node beat in group \(group) on :\(victim): \(seen) \((try? redisCluster.command(port: victim, ["EVAL", beats, "0", pattern])) ?? "")")

        try #require(redisCluster.node(port: victim)).restart()
        #expect(try redisCluster.masterPort(servingKey: cluster.keyPrefix + "{\(group)}") == victim, "the master came back with its slots")

        for (name, client) in [("alice", alice), ("bob", bob)] {
            let closed = try client.waitForClose(timeout: .seconds(15))
            #expect(closed.isClusterDataLost, "\(name): \(closed); \(cluster.describeNodes(logBytes: 3000))")
        }
        for node in 0..<3 {
            #expect(eventually(timeout: 10) { ((try? cluster.node(node).metric("rollcall_cluster_data_losses_total")) ?? 0) >= 1 },
                    "n\(node + 1) counted the loss")
        }
        // The cluster serves again: a login and a join, seen from another node.
        var carol: RollcallConnection?
        #expect(eventually(timeout: 10) {
            carol = try? cluster.session("carol", node: 2)
            return carol != nil
        }, "a login after the loss: \(cluster.describeNodes())")
        #expect(try #require(carol).join("lobby").ok)
        // alice and bob may still be listed: when the lobby's group was on another master,
        // their sessions there are held until the presence timeout (docs/protocol.md 49).
        let dave = try cluster.session("dave", node: 0)
        #expect(try dave.join("lobby").ok)
        let online = try dave.channelOp("getOnlineUsers", "lobby")
        let users = Set((online["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })
        #expect(users.isSuperset(of: ["carol", "dave"]), "\(online)")
    }
}
