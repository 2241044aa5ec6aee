import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// While a node is being reaped the scanner sends `session.reapGroup` to every key group at
/// each tick; a pass Redis is slow to answer is not doubled by the next ticks. At 0.2 s
/// heartbeats on a loaded machine the passes piled up in the node's store gate, had their own
/// calls given up there (the reaping never completed), and held every client request of the
/// node past its timeout (chaos on Redis Cluster, session 47).
@Suite("Cluster: one reap pass on the link at a time")
struct ClusterReapPassTests {
    @Test("a reap pass of every group whose answers are held back is not sent again at the next ticks; once answered, the node is reaped")
    func aSlowPassIsNotDoubled() throws {
        let (bed, keys) = try ClusterBed.withClusterKeyGroups(nodes: 2, prefix: "pass:")
        // The `session.reapGroup` scripts that name the dead node (a pass for it), counted per
        // node; their answers are held back until `holding` is off.
        let gone = Array("gone-node".utf8)
        func passScripts(_ commands: [StoreCommand]) -> Int {
            commands.filter { if case .script(let script, let arguments) = $0 { script.name == "session.reapGroup" && arguments.contains(gone) } else { false } }.count
        }
        var reapGroupCalls = [0, 0]
        var holding = true
        bed.beforeStoreCall = { index, commands in reapGroupCalls[index] += passScripts(commands) }
        bed.delaysStoreReply = { _, commands in holding && passScripts(commands) > 0 }
        // The pass is upkeep: it waits in the link's background lane, behind clients' requests.
        var passLanes: Set<String> = []
        bed.storeCallPriority = { _, commands, priority in if passScripts(commands) > 0 { passLanes.insert("\(priority)") } }
        // A node the others declared dead, to be reaped in every group.
        let script = "\"local t = redis.call('TIME') local now = t[1] * 1000 + math.floor(t[2] / 1000) "
            + "redis.call('HSET', ARGV[2], ARGV[3], now) return redis.call('SADD', ARGV[1], ARGV[3])\""
        #expect(try bed.redis.command(["EVAL", script, "0", keys.reaping, keys.controlTag + "deaths", "gone-node"]) == ":1")
        let pass = KeyGroups.clusterCount
        try bed.pump(until: { reapGroupCalls.max()! >= pass }, what: "the first pass of every group sent")
        // Ten more ticks with that pass unanswered: nothing more is sent.
        try? bed.pump(until: { false }, timeout: 1, what: "ten ticks")
        #expect(reapGroupCalls.max() == pass, "reapGroup calls per node while the pass was unanswered: \(reapGroupCalls)")
        #expect(passLanes == ["background"])
        holding = false
        bed.delaysStoreReply = nil
        for node in 0..<2 { bed.releaseHeldReplies(node: node) }
        try bed.pump(until: { (try? bed.redis.command(["SISMEMBER", keys.reaping, "gone-node"])) == ":0" },
                     what: "the node reaped once the pass was answered")
    }
}
