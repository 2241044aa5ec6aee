import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallRedisEngine
import RollcallTestSupport
import Testing

/// PROTOCOL §9 on a Redis Cluster (issue 30 item 5): three nodes on a Redis Cluster of their own
/// (3 masters with a replica each, `cluster-node-timeout` 1 s), clients joined to two channels
/// across the nodes. The keys spread over the masters in 1024 key groups; the master serving
/// the control slot `<prefix>{0}` (the cluster's `meta`, the nodes' beats, group 0's owners)
/// is killed (-9): the one whose loss every node feels. Meanwhile a channel in one of its key
/// groups answers only `UNAVAILABLE` (one on another master only while the cluster says
/// `CLUSTERDOWN`). Its replica is promoted and, with no node restarted,
/// every node serves again within a bound derived from the timeouts: `/readyz` 200 on each, a
/// new join on one node seen by the members on the others. No client saw a presence event twice
/// or out of order (`Roster` over each transcript: `seq` never goes back; a resync's snapshot
/// may skip ahead), and every roster ends equal to the channel's members.
@Suite("Cluster on a Redis Cluster: the control slot's master fails over", .serialized)
struct ClusterRedisClusterFailoverTests {
    /// `cluster-node-timeout` of the test's Redis Cluster.
    static let clusterNodeTimeout = 1.0
    /// The nodes' `cluster.nodeTimeoutSeconds` (and `heartbeatSeconds` 0.2, the harness's).
    static let nodeTimeoutSeconds = 1.0

    /// From the kill to every node serving again:
    /// - the masters mark the dead one failed: `cluster-node-timeout` to suspect it, about as
    ///   long again for the failure reports to reach a majority by gossip (2 × the timeout);
    /// - the replica's election waits 500 ms + up to 500 ms at random (rank 0, one replica): 1 s;
    /// - a node's request to the dead master fails within `nodeTimeoutSeconds`, and its next
    ///   slot map refresh comes after a backoff of at most 2 s (docs/cluster.md, "Redis
    ///   Cluster"), then its first heartbeat (0.2 s) makes `/readyz` 200;
    /// - plus 4 s of margin for a 2-core machine running the other shard beside this one.
    static var servesAgainWithin: TimeInterval { 2 * clusterNodeTimeout + 1 + nodeTimeoutSeconds + 2 + 0.2 + 4 }

    @Test("kill -9 of the master serving the keys: the replica is promoted, every node serves again within the bound, no event twice or out of order")
    func followsTheKeysMasterFailover() throws {
        let redisCluster = try RedisClusterNodes(masters: 3, replicasPerMaster: 1, nodeTimeoutMilliseconds: Int(Self.clusterNodeTimeout * 1000))
        let cluster = try ClusterProcess(config: ["cluster": ["nodeTimeoutSeconds": Self.nodeTimeoutSeconds]], redisCluster: redisCluster)
        let pids = (0..<3).map { cluster.node($0).process.pid }
        let users = ["alice", "bob", "carol"]
        let channels = ["lobby", "porch"]
        let clients = try users.enumerated().map { node, user in try cluster.session(user, node: node, recordTranscript: true) }
        for channel in channels {
            for (index, client) in clients.enumerated() {
                let joined = try client.join(channel, state: ["seat": "\(index)"])
                #expect(joined.ok, "\(users[index]) joins \(channel): \(joined)")
                for earlier in clients[..<index] { _ = try earlier.presenceEvent("join", channel: channel, publisher: users[index]) }
            }
        }

        let keysMaster = try redisCluster.masterPort(servingKey: cluster.keyPrefix + "{0}")
        // A channel whose key group the killed master serves too: its requests need that
        // master, whatever the nodes' beats do meanwhile (the others' keys stay served).
        let groups = KeyGroups(count: KeyGroups.clusterCount)
        let probe = try #require((0..<200).map { "probe\($0)" }.first { name in
            (try? redisCluster.masterPort(servingKey: cluster.keyPrefix + "{\(groups.group(of: "c:" + name))}")) == keysMaster
        }, "a channel in one of the killed master's key groups")
        #expect(try clients[0].join(probe).ok)
        // The replica has every write so far (else the failover is a data loss: 1012 everywhere).
        #expect(try RedisWire.command(port: keysMaster, ["WAIT", "1", "2000"]) == ":1", "the replica acknowledged the writes")
        let killedAt = Date()
        try #require(redisCluster.node(port: keysMaster)).kill()

        // Until every node is on the promoted replica, what needs Redis answers UNAVAILABLE
        // with retryAfterMs (or succeeds, before a node noticed), never anything else.
        var unavailable: [String: Int] = [:]
        var otherFailures: [String] = []
        var round = 0
        var promoted = false
        let servingAgain = eventually(timeout: Self.servesAgainWithin) {
            round += 1
            let channel = round % 5 == 0 ? "lobby" : probe
            if round % 2 == 0 || channel == "lobby", let reply = try? clients[0].channelOp("setState", channel, ["state": ["round": .string("\(round)")]]), !reply.ok {
                if reply.errorCode == .unavailable, (reply.retryAfterMs ?? 0) > 0 { unavailable[channel, default: 0] += 1 } else { otherFailures.append("\(channel): \(reply)") }
            }
            promoted = promoted || ((try? redisCluster.masterPort(servingKey: cluster.keyPrefix + "{0}")).map { $0 != keysMaster } ?? false)
            return promoted && (0..<3).allSatisfy { (try? RawHTTP.get(port: cluster.node($0).port, path: "/readyz").status) == 200 }
        }
        #expect(servingAgain, "within \(Self.servesAgainWithin) s: promoted \(promoted), \(cluster.describeNodes())")
        #expect(unavailable[probe, default: 0] > 0, "a request made while \(probe)'s keys had no master answers UNAVAILABLE: \(unavailable)")
        #expect(otherFailures.isEmpty, "only UNAVAILABLE while the keys have no master: \(otherFailures)")

        // A new join on n3 reaches the members on n1 and n2: its join event, or a snapshot that
        // lists dave (a node that resynced after the failover, PROTOCOL §9).
        var dave: RollcallConnection?
        #expect(eventually(timeout: max(1, Self.servesAgainWithin - Date().timeIntervalSince(killedAt))) {
            dave = try? cluster.session("dave", node: 2, recordTranscript: true)
            return dave != nil
        }, "a login on n3 after the failover")
        let daveJoined = try #require(dave).join("lobby", state: ["seat": "3"])
        #expect(daveJoined.ok, "\(daveJoined)")
        for (index, client) in clients.prefix(2).enumerated() {
            let heard = try? client.waitForEvent(timeout: .seconds(max(1, Self.servesAgainWithin - Date().timeIntervalSince(killedAt)))) { event in
                guard event.name == "presence", event["channel"]?.stringValue == "lobby" else { return false }
                if event.type == "join" { return event["publisher"]?.stringValue == "dave" }
                return event.type == "snapshot" && (event["snapshot"]?.arrayValue ?? []).contains { $0["userId"]?.stringValue == "dave" }
            }
            #expect(heard != nil, "\(users[index]) on n\(index + 1) learnt of dave's join on n3: \(cluster.describeNodes())")
        }
        let servedAfter = Date().timeIntervalSince(killedAt)
        #expect(servedAfter <= Self.servesAgainWithin, "served again \(servedAfter) s after the kill, bound \(Self.servesAgainWithin) s")

        // No node restarted or was declared dead; each came back at the new master.
        #expect((0..<3).map { cluster.node($0).process.pid } == pids)
        #expect(eventually(timeout: 5) { (try? cluster.metric("rollcall_cluster_nodes")) == 9 }, "each node sees all three: \(cluster.describeNodes())")
        for node in 0..<3 {
            #expect((try cluster.node(node).metric("rollcall_redis_master_changes_total") ?? 0) >= 1, "n\(node + 1) counted the master change")
        }

        // A last change in each channel, then every client's roster from its transcript.
        #expect(eventually(timeout: 5) { (try? clients[1].channelOp("setState", "porch", ["state": ["seat": "last"]]).ok) == true })
        let expected: [String: Set<String>] = ["lobby": ["alice", "bob", "carol", "dave"], "porch": ["alice", "bob", "carol"]]
        for (index, client) in clients.enumerated() {
            for channel in channels {
                var roster = Roster(channel: channel, me: users[index])
                let settled = eventually(timeout: 10) {
                    roster = Roster(channel: channel, me: users[index])
                    for object in client.transcript { roster.apply(object) }
                    let lastChange = channel != "porch" || index == 1 || roster.members?["bob"]?["seat"] == "last"
                    return roster.members.map { Set($0.keys) } == expected[channel] && lastChange
                }
                #expect(settled, "\(users[index]) on n\(index + 1): \(roster)")
                #expect(roster.faults.isEmpty, "\(users[index]) in \(channel): an event twice or out of order: \(roster.faults)")
            }
        }
    }
}
