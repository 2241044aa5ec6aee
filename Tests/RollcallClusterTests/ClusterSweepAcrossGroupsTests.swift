import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// `status.sweep` per key group (session 44): the scanner sweeps its slices, each call on one
/// group's slot; every node's `rollcall_subscriptions` is the cluster's count, which the
/// scanner leaves in `P{0}meta` (`subs`) once its sweeps covered every group.
@Suite("Cluster: the user-status sweep per key group")
struct ClusterSweepAcrossGroupsTests {
    @Test("with 1024 key groups every node counts the cluster's subscriptions; an expired one is swept and the count follows")
    func everyNodeCountsTheClustersSubscriptions() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "sweepg:", heartbeatSeconds: 0.1, slotAudit: true)
        let keys = ClusterKeys(prefix: "sweepg:", groups: KeyGroups(count: KeyGroups.clusterCount))
        #expect(keys.userGroup(Name(unchecked: "alice")) != keys.userGroup(Name(unchecked: "bob")))
        let alice = try bed.login("alice", on: 0)
        _ = try bed.login("bob", on: 1)
        let carol = try bed.login("carol", on: 1)
        #expect(try bed.request(alice, "subscribeUserStatus", ["userIds": ["bob"]])["ok"]?.boolValue == true)
        #expect(try bed.request(carol, "subscribeUserStatus", ["userIds": ["bob"]])["ok"]?.boolValue == true)
        try bed.pump(until: { bed.brokers.allSatisfy { $0.subscriptionCount == 2 } }, timeout: 15,
                     what: "both nodes count 2 subscriptions: \(bed.brokers.map(\.subscriptionCount))")
        // carol's runs out (its expiry moved into the past behind the nodes' backs, as the
        // shortest duration is a minute): swept in its group, and the count follows on both nodes.
        let carolsGroup = keys.user(Name(unchecked: "carol")).group
        #expect(try bed.redis.command(["ZADD", carolsGroup + "subx:5:carol", "1", "bob"]) == ":0")
        #expect(try bed.redis.command(["ZADD", carolsGroup + "subexp", "1", "5:carolbob"]) == ":0")
        try bed.pump(until: { bed.brokers.allSatisfy { $0.subscriptionCount == 1 } }, timeout: 15,
                     what: "both nodes count 1 subscription: \(bed.brokers.map(\.subscriptionCount))")
        #expect(try bed.redis.command(["ZCARD", carolsGroup + "subexp"]) == ":0", "carol's expired subscription was swept")
        #expect(try bed.redis.command(["ZCARD", carolsGroup + "subx:5:carol"]) == ":0")
        let crossing = try bed.crossSlotScripts(among: [UserStatusScripts.sweep, SessionScripts.declareDead])
        #expect(crossing.isEmpty, "\(crossing.sorted())")
    }
}
