import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// The user-status fan-out leaves the scripts (docs/cluster.md, "Delivery"): the script of the
/// user whose record changed answers the change and the subscribers it read in the user's key
/// group, and the node that ran it publishes it to each inbox (`P{<g>}uu:`) right after the
/// answer. A node drops a record of a version an inbox already brought, or an older one.
/// These scenes hold no session, resume or reap (16 groups: issue 30 step 2 is not done yet).
@Suite("Cluster: user status published by the node to inboxes in every group")
struct ClusterStatusFanOutTests {
    /// The `userStatus` records of `user` `client` got, in arrival order.
    private func records(_ client: ClusterBed.Client, of user: String) -> [JSON] {
        client.events.filter { $0.string("event") == "userStatus" }
            .flatMap { $0["statuses"]?.arrayValue ?? [] }
            .filter { $0.string("userId") == user }
    }

    /// The custom statuses of those records that have one (a login's `online` may come too).
    private func customStatuses(_ client: ClusterBed.Client, of user: String) -> [String] {
        records(client, of: user).compactMap { $0.string("customStatus") }
    }

    @Test("16 groups, two nodes: a change of the target's status reaches each subscriber (five groups, two on one node) and the target's other session once each")
    func fanOutToSubscribersOfSeveralGroups() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = 16
        configuration.userStatus.customStatusPerSecond = 100
        let prefix = "fanout:"
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: 16))
        let users = keys.usersInDistinctGroups(count: 5)
        try #require(users.count == 5)
        let targetName = users[0]
        let target = try bed.login(targetName, on: 1)
        let targetElsewhere = try bed.login(targetName, on: 0)
        // Two subscribers on node 0 (two inboxes heard by one node), two on node 1.
        let watchers = try users.dropFirst().enumerated().map { index, name in try bed.login(name, on: index % 2) }
        for watcher in watchers {
            let reply = try bed.request(watcher, "subscribeUserStatus", ["userIds": .array([.string(targetName)])])
            #expect(reply["ok"]?.boolValue == true, "\(reply.compactString)")
        }
        let hearers = watchers + [targetElsewhere]

        // Three changes from node 1: on one Redis the node's publishes keep their order, so once
        // the last is heard everywhere, a repeat of the first two would have arrived before it.
        for text in ["away", "back", "done"] {
            #expect(try bed.request(target, "setCustomStatus", ["customStatus": .string(text)])["ok"]?.boolValue == true)
        }
        try bed.pump(until: { hearers.allSatisfy { customStatuses($0, of: targetName).contains("done") } },
                     what: "the last change heard by every subscriber and the target's other session")
        for hearer in hearers {
            #expect(customStatuses(hearer, of: targetName) == ["away", "back", "done"], "session \(hearer.sessionId): \(records(hearer, of: targetName))")
        }
        #expect(Set(customStatuses(target, of: targetName)).isDisjoint(with: ["away", "back", "done"]),
                "the session that made the changes hears none of them: \(records(target, of: targetName))")
    }

    @Test("an inbox record of a version the inbox already brought, or an older one, is dropped; a newer one is delivered")
    func olderOrRepeatedVersionsAreDropped() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = 16
        let prefix = "fanv:"
        let bed = try ClusterBed(nodes: 1, configuration: configuration, prefix: prefix)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: 16))
        let watcher = try bed.login("watcher", on: 0)
        let inbox = keys.inbox(of: Name(unchecked: "watcher"))
        func record(_ version: Int, _ custom: String) -> [UInt8] {
            Array("U\n\(version)\nbob\nonline\n\(1000 + version)\n1000\n\(1000 + version)\nweb\n=\(custom)".utf8)
        }
        // Once the node hears the inbox (its subscription confirmed; a publish before that
        // reached nobody, and the next, older one was then the first it saw: CI, session 47).
        // The probe's kind is none the inbox knows: it is dropped.
        try bed.pump(until: { (try? bed.redis.command(["PUBLISH", inbox, "probe"])) == ":1" }, what: "the watcher's inbox heard")
        // As two nodes' publishes of bob's changes 5 and 4 arriving newest first, then 5 again.
        for (version, custom) in [(5, "five"), (4, "four"), (5, "five again"), (6, "six")] {
            _ = try bed.run([.command([storeArgument("PUBLISH"), Array(inbox.utf8), record(version, custom)])], on: 0)
        }
        try bed.pump(until: { customStatuses(watcher, of: "bob").contains("six") }, what: "version 6 delivered")
        #expect(customStatuses(watcher, of: "bob") == ["five", "six"], "\(records(watcher, of: "bob"))")
    }
}
