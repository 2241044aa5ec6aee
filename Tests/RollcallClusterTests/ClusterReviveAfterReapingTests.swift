import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A node declared dead fences itself and revives (`cluster.revive`) only once the reaper has
/// orphaned its sessions in every key group (it left `P{0}reaping`): a session it started once
/// back, in a group not reaped yet, would otherwise be orphaned with the old ones behind its
/// back (session 44; docs/cluster.md, "The scans").
@Suite("Cluster: a dead node revives after its reaping")
struct ClusterReviveAfterReapingTests {
    @Test("revive answers reaping and changes nothing while the node is in P{0}reaping; once out, it puts the node back")
    func reviveWaitsForTheReaping() throws {
        // Reaper ticks 5 s apart: none runs between the steps below.
        let bed = try ClusterBed(nodes: 1, configuration: Configuration(), prefix: "rev:", heartbeatSeconds: 5)
        let keys = ClusterKeys(prefix: "rev:")
        let node = "declared-dead"
        #expect(try bed.redis.command(["SET", keys.deadMark(of: node), "1"]) == "+OK")
        #expect(try bed.redis.command(["SADD", keys.reaping, node]) == ":1")
        let revive = NodeHeartbeat.revive.command(["nodes": keys.nodes, "node": node, "nodeKey": keys.node(node),
                                                   "deadMark": keys.deadMark(of: node), "reaping": keys.reaping])
        #expect(try bed.run([revive], on: 0).first?.text == "reaping")
        #expect(try bed.redis.command(["ZSCORE", keys.nodes, node]) == "$-1", "not back among the live nodes")
        #expect(try bed.redis.command(["EXISTS", keys.deadMark(of: node)]) == ":1", "still marked dead")
        #expect(try bed.redis.command(["SREM", keys.reaping, node]) == ":1")
        #expect(try bed.run([revive], on: 0).first?.text == "ok")
        #expect(try bed.redis.command(["ZSCORE", keys.nodes, node]) != "$-1", "back among the live nodes")
        #expect(try bed.redis.command(["EXISTS", keys.deadMark(of: node)]) == ":0")
    }
}
