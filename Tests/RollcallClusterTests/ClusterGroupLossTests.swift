import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// On a Redis Cluster one master can lose its share of the keys while the control slot's
/// master keeps the epoch and the nodes' beats: a failover to a replica far behind, a master
/// restarted empty. Nothing noticed it, so the cluster ran on half a state (members of lost
/// channels gone, statuses offline, sessions resumed into it; chaos seeds 161356634423154,
/// 39620691428767). Each node's group beat (`GroupBeat`) now finds its earlier beats gone
/// from that master's groups and renews the epoch: every node handles it as a data loss.
/// Here the 1024 groups share one redis-server (the group beat then uses group 1); the loss of
/// every group but the control slot's is made by hand.
@Suite("Cluster: a loss of one master's key groups")
struct ClusterGroupLossTests {
    /// Keys whose group beat a node wrote (`P{1}gb:<node>`).
    private func groupBeats(_ bed: ClusterBed, _ keys: ClusterKeys) throws -> String {
        let script = "\"return #redis.call('KEYS', ARGV[1])\""
        return try bed.redis.command(["EVAL", script, "0", keys.groupTag(1) + "gb:*"])
    }

    @Test("every key of the groups but the control slot's gone: each node notices, closes its sessions with 1012, registers again; old tokens no longer resume")
    func aLostShareIsADataLoss() throws {
        let (bed, keys) = try ClusterBed.withClusterKeyGroups(nodes: 2, prefix: "grouploss:") { $0.presence.timeoutSeconds = 60 }
        // A user of group 0, whose session record the loss keeps, in a channel of another
        // group, which it loses: resumed, the session would be in a channel without it.
        let kept = try #require((0..<20_000).map { "user\($0)" }.first { keys.userGroup(Name(unchecked: $0)) == 0 })
        #expect(keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).groupNumber != 0)
        let alice = try bed.member(kept, on: 0)
        let bob = try bed.member("bob", on: 1)
        try bed.pump(until: { (try? groupBeats(bed, keys)) == ":2" }, what: "both nodes' group beats")
        // Beats over more than a node timeout (1 s here), so that each node has a beat Redis
        // took a node timeout after its first there to compare with.
        try? bed.pump(until: { false }, timeout: 1.5, what: "more beats")
        #expect(alice.closedWith == nil && bob.closedWith == nil)

        let script = "\"local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do "
            + "if string.sub(k, 1, #ARGV[2]) ~= ARGV[2] then redis.call('DEL', k) n = n + 1 end end return n\""
        let deleted = try bed.redis.command(["EVAL", script, "0", keys.prefix + "{*", keys.controlTag])
        #expect(deleted != ":0", "keys of other groups than 0 were there to lose: \(deleted)")

        try bed.pump(until: { alice.closedWith != nil && bob.closedWith != nil }, what: "both sessions closed")
        #expect(alice.closedWith == .serviceRestart && bob.closedWith == .serviceRestart)
        #expect(bed.links.allSatisfy { $0.dataLosses == 1 }, "each node counted one loss: \(bed.links.map(\.dataLosses))")
        try bed.pump(until: { bed.links.allSatisfy { $0.epoch != nil } }, what: "both nodes registered again")

        // Her record survived; her token does not (PROTOCOL §9): she logs in anew and joins again.
        #expect(try bed.redis.command(["EXISTS", keys.user(Name(unchecked: kept)).session(alice.sessionId).record]) == ":1")
        let back = try bed.login(kept, on: 1, ["resumeToken": .string(alice.resumeToken)])
        #expect(!back.resumed, "the old token after the loss")
        #expect(try bed.request(back, "join", ["channel": "room"])["ok"]?.boolValue == true)
    }

    @Test("nothing lost: beats for several node timeouts close nothing and count no loss")
    func nothingLostNothingHappens() throws {
        let (bed, keys) = try ClusterBed.withClusterKeyGroups(nodes: 2, prefix: "groupkept:") { $0.presence.timeoutSeconds = 60 }
        let alice = try bed.member("alice", on: 0)
        let bob = try bed.member("bob", on: 1)
        try bed.pump(until: { (try? groupBeats(bed, keys)) == ":2" }, what: "both nodes' group beats")
        try? bed.pump(until: { false }, timeout: 3, what: "beats")
        #expect(alice.closedWith == nil && bob.closedWith == nil)
        #expect(bed.links.allSatisfy { $0.dataLosses == 0 })
    }
}
