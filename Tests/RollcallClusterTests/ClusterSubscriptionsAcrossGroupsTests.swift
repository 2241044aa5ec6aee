import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Subscriptions whose subscriber and target are in different key groups (docs/cluster.md,
/// "User status across nodes"): the target's side is written on its slot first
/// (`status.admit`, where `maxSubscribersPerUser` is checked), then the subscriber's; an
/// unsubscribe or a cap eviction takes the subscriber off the target's side afterwards
/// (`status.dropSubscriber`).
@Suite("Cluster: subscriptions across key groups")
struct ClusterSubscriptionsAcrossGroupsTests {
    private let prefix = "subg:"
    private var keys: ClusterKeys { ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount)) }

    private func bed(maxSubscriptions: Int = 3000, maxSubscribers: Int = 5000) throws -> ClusterBed {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        configuration.userStatus.maxSubscriptionsPerUser = maxSubscriptions
        configuration.userStatus.maxSubscribersPerUser = maxSubscribers
        return try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix, heartbeatSeconds: 0.1)
    }

    /// Whether `subscriber` is among `target`'s subscribers in Redis.
    private func isSubscriber(_ bed: ClusterBed, _ subscriber: String, of target: String) throws -> Bool {
        !(try bed.redis.command(["ZSCORE", keys.user(Name(unchecked: target)).subscribers, subscriber])).hasPrefix("$-1")
    }

    private func failedCodes(_ reply: JSON) -> [String] {
        (reply["result"]?["failed"]?.arrayValue ?? []).compactMap { $0.string("code") }
    }

    @Test("the target's subscriber limit holds across groups: the second subscriber is refused, and only the first is on the target's side")
    func theTargetsLimitHolds() throws {
        let bed = try bed(maxSubscribers: 1)
        let names = ["alice", "bob", "carol"].map { Name(unchecked: $0) }
        #expect(Set(names.map(keys.userGroup)).count == 3, "three groups")
        let alice = try bed.login("alice", on: 0), carol = try bed.login("carol", on: 1)
        let first = try bed.request(alice, "subscribeUserStatus", ["userIds": ["bob"]])
        #expect(first["ok"]?.boolValue == true && failedCodes(first).isEmpty, "\(first.compactString)")
        #expect(first["result"]?["statuses"]?.arrayValue?.first?.string("userId") == "bob", "bob's record comes with it: \(first.compactString)")
        let second = try bed.request(carol, "subscribeUserStatus", ["userIds": ["bob"]])
        #expect(failedCodes(second) == ["TARGET_SUBSCRIBER_LIMIT"], "\(second.compactString)")
        #expect(try isSubscriber(bed, "alice", of: "bob"))
        #expect(try !isSubscriber(bed, "carol", of: "bob"))
        let mine = try bed.request(carol, "getSubscriptions")
        #expect(mine["result"]?["subscriptions"]?.arrayValue?.isEmpty == true, "\(mine.compactString)")
    }

    @Test("an unsubscribe and a cap eviction take the subscriber off the target's side in the target's group; a change of the target then reaches no one")
    func leavingTakesTheSubscriberOff() throws {
        let bed = try bed(maxSubscriptions: 2)
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(alice, "subscribeUserStatus", ["userIds": ["bob", "carol"]])["ok"]?.boolValue == true)
        #expect(try isSubscriber(bed, "alice", of: "bob") && isSubscriber(bed, "alice", of: "carol"))
        // A third subscription: the cap (2) drops the earliest, bob.
        let third = try bed.request(alice, "subscribeUserStatus", ["userIds": ["dave"]])
        #expect(third["ok"]?.boolValue == true, "\(third.compactString)")
        try bed.pump(until: { (try? isSubscriber(bed, "alice", of: "bob")) == false }, what: "alice off bob's subscribers after the eviction")
        #expect(try isSubscriber(bed, "alice", of: "dave"))
        #expect(try bed.request(alice, "unsubscribeUserStatus", ["userIds": ["carol"]])["ok"]?.boolValue == true)
        try bed.pump(until: { (try? isSubscriber(bed, "alice", of: "carol")) == false }, what: "alice off carol's subscribers after the unsubscribe")
        // bob's change is announced to no subscriber: alice hears nothing of it.
        let before = alice.events.count
        #expect(try bed.request(bob, "setCustomStatus", ["customStatus": "busy"])["ok"]?.boolValue == true)
        let marker = try bed.request(alice, "getUserStatus", ["userIds": ["bob"]])
        #expect(marker["result"]?["statuses"]?.arrayValue?.first?["customStatus"]?.stringValue == "busy", "\(marker.compactString)")
        #expect(!alice.events.dropFirst(before).contains { $0.string("event") == "userStatus" && ($0["statuses"]?.arrayValue ?? []).contains { $0.string("userId") == "bob" } },
                "alice no longer subscribes to bob")
    }
}
