import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// docs/cluster.md, "Where the build stands", step 2 (liveness in the user's slot, session 45):
/// with more than one key group `session.start` and `session.claim` run on the user's slot and
/// cannot read `P{0}nodes`. The reaper marks each group as it orphans a dead node's sessions
/// there (`P{<g>}fence:<node>`, the time it was declared dead), and the node passes Redis' time
/// of its latest beat that found it live: a start or a claim from before the death is refused
/// (`fenced`), one from after a revival is not.
@Suite("Cluster: liveness in the user's slot with 1024 key groups", .serialized)
struct ClusterLivenessAcrossGroupsTests {
    @Test("a node declared dead starts no session and claims none where the reaper marked it; once revived it does again, and start keeps to one slot")
    func aDeadNodeIsRefusedInTheUsersSlot() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let prefix = "live:"
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix, slotAudit: true)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
        let bob = try bed.login("bob", on: 0, ["presenceTimeout": .int(30)])
        let dave = try bed.login("dave", on: 1, ["presenceTimeout": .int(30)])
        let bobRecord = keys.user(Name(unchecked: "bob")).session(bob.sessionId).record

        // n1 stops beating but keeps serving: n2's reaper declares it dead and orphans its
        // sessions in every group, marking each.
        bed.links[0].heartbeat.stop()
        try bed.pump(until: {
            (try? bed.redis.command(["HGET", bobRecord, "node"])) == "$0"
                && (try? bed.redis.command(["SISMEMBER", keys.reaping, "n1"])) == ":0"
        }, what: "n1 declared dead and reaped in every group")
        #expect(try bed.redis.command(["EXISTS", keys.user(Name(unchecked: "carol")).group + "fence:n1"]) == ":1",
                "carol's group holds n1's fence mark")

        // n1 does not know yet. A login there is refused in carol's slot, and leaves nothing.
        let carol = bed.open(on: 0)
        let refused = try bed.request(carol, "login", ["userId": "carol"])
        #expect(refused["error"]?.string("code") == "UNAVAILABLE", "\(refused.compactString)")
        #expect(try bed.redis.command(["EXISTS", keys.user(Name(unchecked: "carol")).sessions]) == ":0", "no session of carol")
        // Nor does it claim dave's session (held on n2 now).
        try bed.holdInRedis(dave)
        let resume = bed.open(on: 0)
        let claimed = try bed.request(resume, "login", ["userId": "dave", "resumeToken": .string(dave.resumeToken)])
        #expect(claimed["error"]?.string("code") == "UNAVAILABLE", "\(claimed.compactString)")

        // n1 beats again: it learns it was declared dead, fences itself, revives, and its
        // next live beat is later than the mark.
        bed.links[0].heartbeat.start(on: bed.links[0].route)
        try bed.pump(until: { (try? bed.redis.command(["ZSCORE", keys.nodes, "n1"])).map { !$0.hasPrefix("$-1") } == true },
                     what: "n1 back among the live nodes")
        var started: JSON = .null
        try bed.pump(until: {
            let client = bed.open(on: 0)
            started = (try? bed.request(client, "login", ["userId": "carol"])) ?? .null
            return started["ok"]?.boolValue == true
        }, what: "a login of carol on n1 once it is live again")
        var resumed: JSON = .null
        try bed.pump(until: {
            let client = bed.open(on: 0)
            resumed = (try? bed.request(client, "login", ["userId": "dave", "resumeToken": .string(dave.resumeToken)])) ?? .null
            return resumed["ok"]?.boolValue == true
        }, what: "dave's session resumed on n1 once it is live again")
        #expect(resumed["result"]?["resumed"]?.boolValue == true, "\(resumed.compactString)")

        let crossing = try bed.crossSlotScripts(among: [SessionScripts.start])
        #expect(crossing.isEmpty, "session.start keeps to the user's slot: \(crossing.sorted())")
    }
}

