import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// docs/cluster.md, step 1's gaps (session 45): with more than one key group a claim the node
/// made void (`session.cancelClaim`, here because a refence's answer was lost) holds the
/// session again with no node, but the claim's refence had made its channels' fence copies name
/// the claiming node and count it live for messages. The cancel's answer now names the
/// channels, and the node refences them as after an orphaning.
@Suite("Cluster: a cancelled claim refences its channels with 1024 key groups", .serialized)
struct ClusterCancelledClaimRefenceTests {
    @Test("a claim made void after its refence ran: the session's fence copy is none again and it is held for messages")
    func aCancelledClaimIsRefencedAsHeld() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let prefix = "cancelref:"
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
        let room = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).base
        let watcher = try bed.login("watcher", on: 1)
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        try bed.holdInRedis(alice)
        try bed.pump(until: { (try? bed.redis.command(["SISMEMBER", room + ":hm", alice.sessionId])) == ":1" },
                     what: "alice held for room's messages")

        bed.failFirstCall(running: "presence.refence", on: 1, answerLost: true)
        let first = try bed.request(bed.open(on: 1), "login", ["userId": .string("alice"), "resumeToken": .string(alice.resumeToken)])
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        try bed.pump(until: {
            (try? bed.redis.command(["HGET", room + ":o", alice.sessionId])) == "$0"
                && (try? bed.redis.command(["SISMEMBER", room + ":hm", alice.sessionId])) == ":1"
        }, what: "room's copy of alice names no node and counts her held again")
        let record = keys.user(Name(unchecked: "alice")).session(alice.sessionId).record
        #expect(try bed.redis.command(["HGET", record, "node"]) == "$0", "held with no node")
        // The retry resumes her, and the copy names n2.
        let retry = try bed.login("alice", on: 1, ["resumeToken": .string(alice.resumeToken)])
        #expect(retry.resumed)
        #expect(try bed.redis.command(["HGET", room + ":o", alice.sessionId]) == "$2")
    }
}
