import Foundation
@testable import RollcallCore
import RollcallProtocol
import RollcallRedis
@testable import RollcallRedisEngine
import Testing

/// Every key of a user and of its sessions sits under the user's key group's tag `P{<g>}`
/// (docs/cluster.md, "Keys"; issue 30 step 4), with its group's buckets of the session and
/// user-status indexes: a script about one user runs on one Redis Cluster slot. The scripts
/// compute a user's group in Lua as ``KeyGroups/group(of:)`` does in Swift; the Redis scenes
/// here fail if the two ever disagree (a script would miss the keys the node named).
@Suite("Cluster: a user's and its sessions' keys in the user's key group")
struct ClusterUserKeyGroupTests {
    @Test(arguments: ["alice", "a}b", "{x}", "}{", "ünï {code}", String(repeating: "z", count: 200)])
    func aUsersKeysShareOneSlotWithItsGroupsBuckets(name: String) {
        let keys = ClusterKeys(prefix: "rc:", groups: KeyGroups(count: KeyGroups.clusterCount))
        let user = Name(unchecked: name)
        let group = keys.userGroup(user)
        let mine = keys.user(user), session = mine.session("n1.7")
        let all = [mine.channels, mine.sessions, mine.status, mine.subscriptions, mine.subscriptionExpiries, mine.subscribers,
                   session.record, session.channels, session.ending, session.startCancel,
                   keys.heldSessions(group: group), keys.endingSessions(group: group), keys.customStatusExpiries(group: group),
                   keys.subscriptionExpiryIndex(group: group)]
        #expect(Set(all.map(RedisClusterSlot.of)).count == 1, "\(name): \(all)")
        #expect(mine.group == "rc:{\(group)}")
        #expect(ClusterKeys(prefix: "rc:").user(user).status == "rc:{0}st:" + ClusterKeys.lengthPrefixed(name), "one group on one Redis")
    }

    /// The keys under the bed's prefix, one `KEYS` (the bed's Redis is its own).
    private func keysInRedis(_ bed: ClusterBed, prefix: String) throws -> [String] {
        let replies = try bed.run([.command(["KEYS", prefix + "*"].map(storeArgument))], on: 0)
        return (replies.first?.elements ?? []).compactMap(\.text)
    }

    @Test("with 1024 groups, every key the scripts write for one user and its session is in the user's slot, named as the node names it")
    func everyKeyOfOneUserInItsSlot() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let prefix = "ukeys:"
        let bed = try ClusterBed(nodes: 1, configuration: configuration, prefix: prefix)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
        let (alice, bob) = (Name(unchecked: "alice"), Name(unchecked: "bob"))
        #expect(keys.userGroup(alice) != keys.userGroup(bob), "two groups")
        let client = try bed.login("alice", on: 0, ["customStatus": "here"])
        #expect(try bed.request(client, "setCustomStatus", ["customStatus": "away"])["ok"]?.boolValue == true)
        #expect(try bed.request(client, "subscribeUserStatus", ["userIds": ["bob"]])["ok"]?.boolValue == true)
        #expect(try bed.request(client, "getSubscriptions")["ok"]?.boolValue == true)
        #expect(try bed.request(client, "join", ["channel": "room"])["ok"]?.boolValue == true)

        let mine = keys.user(alice), session = mine.session(client.sessionId)
        let group = keys.userGroup(alice)
        let expected: Set<String> = [mine.sessions, mine.status, mine.subscriptions, mine.subscriptionExpiries, session.record, session.channels,
                                     keys.customStatusExpiries(group: group), keys.subscriptionExpiryIndex(group: group)]
        let written = Set(try keysInRedis(bed, prefix: prefix))
        #expect(expected.isSubset(of: written), "missing: \(expected.subtracting(written).sorted()); in Redis: \(written.sorted())")
        #expect(written.contains(keys.user(bob).subscribers), "bob's subscribers, in bob's group: \(written.sorted())")
        let aliceSlot = RedisClusterSlot.of(mine.status)
        // Every key naming alice or her session: in her slot — but the ones still to move
        // (`P uc:`, written by the presence scripts; `P hm*:`, by presence.publish).
        let hers = written.filter { ($0.contains("5:alice") || $0.contains(client.sessionId)) && !$0.hasPrefix(prefix + "uc:") }
        for key in hers { #expect(RedisClusterSlot.of(key) == aliceSlot, "\(key) is not in alice's slot") }

        #expect(try bed.request(client, "logout")["ok"]?.boolValue == true)
        try bed.pump(until: { (try? bed.redis.command(["EXISTS", session.record])) == ":0" }, what: "alice's session ended in Redis")
        #expect(try bed.redis.command(["ZCARD", keys.endingSessions(group: group)]) == ":0", "the end finished")
        let stored = try bed.run([.command(["HGET", mine.status, "status"].map(storeArgument))], on: 0)
        #expect(stored.first?.text == "loggedOut", "her record, in her group")
    }

    private func heard(_ client: ClusterBed.Client, _ user: String, _ matches: (JSON) -> Bool) -> Bool {
        client.events.contains { event in
            event.string("event") == "userStatus" && (event["statuses"]?.arrayValue ?? []).contains { $0.string("userId") == user && matches($0) }
        }
    }

    @Test("16 groups, two nodes, users in different groups: login, status, subscriptions, logout and disconnectUser")
    func usersOfDifferentGroupsAcrossTwoNodes() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = 16
        let prefix = "ugroups:"
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: 16))
        let users = keys.usersInDistinctGroups(count: 3)
        try #require(users.count == 3)
        let (watcherName, bobName, carolName) = (users[0], users[1], users[2])

        let watcher = try bed.login(watcherName, on: 0)
        let bob = try bed.login(bobName, on: 1)
        let subscribed = try bed.request(watcher, "subscribeUserStatus", ["userIds": .array([.string(bobName), .string(carolName)])])
        #expect(subscribed["ok"]?.boolValue == true, "\(subscribed.compactString)")
        let listed = try bed.request(watcher, "getSubscriptions")
        #expect(Set(listed["result"]?["subscriptions"]?.arrayValue?.compactMap { $0.string("userId") } ?? []) == [bobName, carolName],
                "\(listed.compactString)")

        // bob's custom status, set on node 1, reaches the watcher on node 0 and is read back.
        #expect(try bed.request(bob, "setCustomStatus", ["customStatus": "away"])["ok"]?.boolValue == true)
        try bed.pump(until: { heard(watcher, bobName) { $0.string("customStatus") == "away" } }, what: "bob's custom status heard on node 0")
        let status = try bed.request(watcher, "getUserStatus", ["userIds": .array([.string(bobName)])])
        let record = status["result"]?["statuses"]?.arrayValue?.first
        #expect(record?.string("status") == "online" && record?.string("customStatus") == "away", "\(status.compactString)")

        // carol logs in on both nodes: the watcher hears her online.
        let carolOne = try bed.login(carolName, on: 1)
        let carolZero = try bed.login(carolName, on: 0)
        try bed.pump(until: { heard(watcher, carolName) { $0.string("status") == "online" } }, what: "carol online heard")
        let carolKeys = keys.user(Name(unchecked: carolName))
        #expect(try bed.redis.command(["ZCARD", carolKeys.sessions]) == ":2", "carol's two sessions, in her group")

        // bob logs out on node 1.
        #expect(try bed.request(bob, "logout")["ok"]?.boolValue == true)
        try bed.pump(until: { heard(watcher, bobName) { $0.string("status") == "loggedOut" } }, what: "bob's logout heard on node 0")

        // disconnectUser on node 0 ends carol's sessions on both nodes.
        let answer = try bed.api("disconnectUser", ["userId": .string(carolName)], on: 0)
        #expect(answer.status == 200 && answer.body["result"]?["sessions"]?.numberValue?.intValue == 2, "\(answer.body.compactString)")
        try bed.pump(until: { heard(watcher, carolName) { $0.string("status") == "loggedOut" } }, what: "carol's disconnect heard")
        try bed.pump(until: { carolOne.closedWith != nil && carolZero.closedWith != nil }, what: "both of carol's connections closed")
        #expect(try bed.redis.command(["ZCARD", carolKeys.sessions]) == ":0", "no session of carol in Redis")
        // The node that had a session ends it too when told (finding it gone, or ending it
        // first): the last of the two ends' `status.ended` may follow the answer.
        try bed.pump(until: {
            keys.groups.all.allSatisfy { (try? bed.redis.command(["ZCARD", keys.endingSessions(group: $0)])) == ":0" }
        }, what: "every end finished, in every group")
        for group in keys.groups.all {
            #expect(try bed.redis.command(["ZCARD", keys.heldSessions(group: group)]) == ":0", "nothing held (group \(group))")
        }
        let info = try bed.api("getInfo", [:], on: 1)
        #expect(info.body["result"]?["sessions"]?.numberValue?.intValue == 1, "the watcher alone: \(info.body.compactString)")
    }
}
