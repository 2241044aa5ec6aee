import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §6 across the nodes of a cluster (§9): real `rollcall` nodes sharing one
/// `redis-server` started by the test (``ClusterProcess``, 2 or 3 nodes) answer user status
/// as one broker would.
@Suite("Cluster user status", .serialized)
struct ClusterUserStatusTests {
    @Test("online, platforms, custom status, offline and loggedOut seen from another node; multi-device sync")
    func statusAcrossNodes() throws {
        let cluster = try Self.cluster(nodes: 3)
        let sam = try cluster.node(0).session("sam", platform: "android")
        let subscribed = try sam.subscribe(["bob"])
        #expect(subscribed.ok, "\(subscribed)")
        #expect(subscribed.status(of: "bob")?.statusText == "loggedOut", "never seen reads loggedOut")

        // The gauge counts the cluster's subscriptions (in Redis) on every node, from the next reaper tick.
        for node in 0..<3 {
            #expect(eventually(timeout: 5) { (try? cluster.node(node).metric("rollcall_subscriptions")) == 1 }, "node \(node + 1)")
        }

        let bobWeb = try cluster.node(1).session("bob", platform: "web")
        var record = try sam.waitForStatus(of: "bob") { $0.statusText == "online" }
        #expect(record.platformList == ["web"])

        let bobIOS = try cluster.node(2).session("bob", platform: "ios")
        record = try sam.waitForStatus(of: "bob") { $0.platformList.count == 2 }
        #expect(record.platformList == ["ios", "web"], "sorted, distinct, from sessions on two nodes")
        _ = try bobWeb.waitForStatus(of: "bob") { $0.platformList == ["ios", "web"] }

        let set = try bobIOS.setCustomStatus("Busy")
        #expect(set.ok, "\(set)")
        #expect(set["status"]?.customStatusText == "Busy")
        #expect(set["status"]?.platformList == ["ios", "web"])
        record = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Busy" }
        #expect(record.integer("lastCustomStatusUpdateTime") == set["status"]?.integer("lastCustomStatusUpdateTime"))
        #expect(record == set["status"], "the event's record is the reply's")
        _ = try bobWeb.waitForStatus(of: "bob") { $0.customStatusText == "Busy" }
        #expect(try bobIOS.settledEvents(named: "userStatus").isEmpty, "the session that made the change has the reply")

        #expect(try bobWeb.setCustomStatus("Busy").ok)
        #expect(try sam.settledEvents(named: "userStatus").isEmpty, "setting the same value again sends nothing")
        let read = try sam.userStatus(of: "bob")
        #expect(read == record, "getUserStatus on node A reads what the event said")

        bobIOS.close()
        record = try sam.waitForStatus(of: "bob") { $0.platformList == ["web"] }
        #expect(record.statusText == "online")

        bobWeb.close()
        record = try sam.waitForStatus(of: "bob") { $0.statusText != "online" }
        #expect(record.statusText == "offline", "close frames on both nodes: offline")
        #expect(record.platformList.isEmpty)

        let bobAgain = try cluster.node(2).session("bob", platform: "cli")
        _ = try sam.waitForStatus(of: "bob") { $0.statusText == "online" && $0.platformList == ["cli"] }
        #expect(try bobAgain.request("logout").ok)
        record = try sam.waitForStatus(of: "bob") { $0.statusText != "online" }
        #expect(record.statusText == "loggedOut", "logout of the last session: loggedOut")
        #expect(try cluster.node(1).session("eve", platform: "web").userStatus(of: "bob").statusText == "loggedOut")
    }

    @Test("login custom status and subscriptions events reach the user's session on another node")
    func subscriptionsEventsAcrossNodes() throws {
        let cluster = try Self.cluster(nodes: 2)
        let phone = try cluster.node(0).session("alice", platform: "ios")
        let laptop = try cluster.node(1).session("alice", platform: "macos")
        _ = try phone.waitForStatus(of: "alice") { $0.platformList == ["ios", "macos"] }

        let before = try phone.serverTime()
        let subscribed = try phone.subscribe(["carol", "bob"], duration: 3600)
        #expect(subscribed.ok, "\(subscribed)")
        #expect(Set(subscribed.statuses.compactMap(\.userIdText)) == ["bob", "carol"])
        let event = try laptop.waitForSubscriptionsEvent()
        #expect(Set(event.added) == ["bob", "carol"])
        #expect(event.removed.isEmpty)
        #expect(try phone.settledEvents(named: "subscriptions").isEmpty, "the subscribing session has the reply")

        #expect(try phone.subscribe(["bob"], duration: 7200).ok)
        #expect(try laptop.settledEvents(named: "subscriptions").isEmpty, "a renewal sends no subscriptions event")

        // Pages of one: a cursor from node A works on node B.
        let first = try phone.request("getSubscriptions", ["pageSize": 1])
        #expect(first.ok, "\(first)")
        #expect((first["subscriptions"]?.arrayValue ?? []).map(\.userIdText) == ["bob"])
        let expiresAt = try #require(first["subscriptions"]?.arrayValue?.first?.integer("expiresAt"))
        #expect(expiresAt >= before + 7_200_000 && expiresAt < before + 7_260_000, "renewed to 7200 s: \(expiresAt)")
        let cursor = try #require(first["nextPage"])
        let second = try laptop.request("getSubscriptions", ["pageSize": 1, "page": cursor])
        #expect((second["subscriptions"]?.arrayValue ?? []).map(\.userIdText) == ["carol"])
        #expect(second["nextPage"] == .null)

        // bob logs in on node B with a custom status: alice's sessions on both nodes hear it.
        let bob = try cluster.node(1).session("bob", platform: "web", customStatus: "Lunch")
        for session in [phone, laptop] {
            let record = try session.waitForStatus(of: "bob") { $0.statusText == "online" }
            #expect(record.customStatusText == "Lunch")
        }
        _ = bob

        let unsubscribed = try laptop.request("unsubscribeUserStatus", ["userIds": ["carol", "zed", ""]])
        #expect(unsubscribed.ok, "\(unsubscribed)")
        #expect(unsubscribed.failures == ["": "INVALID_ARGUMENT"])
        let removed = try phone.waitForSubscriptionsEvent()
        #expect(removed.added.isEmpty)
        #expect(removed.removed == ["carol"])
        let left = try phone.request("getSubscriptions")
        #expect((left["subscriptions"]?.arrayValue ?? []).map(\.userIdText) == ["bob"])
        #expect(eventually(timeout: 5) { (try? cluster.node(0).metric("rollcall_subscriptions")) == 1 }, "after the unsubscribe")
    }

    @Test("maxSubscriptionsPerUser drops the earliest across nodes; maxSubscribersPerUser answers TARGET_SUBSCRIBER_LIMIT")
    func capsAcrossNodes() throws {
        let cluster = try Self.cluster(nodes: 3, config: ["userStatus": ["maxSubscriptionsPerUser": 2, "maxSubscribersPerUser": 1]])
        let aliceA = try cluster.node(0).session("alice", platform: "web")
        let aliceB = try cluster.node(1).session("alice", platform: "ios")
        #expect(try aliceA.subscribe(["x"]).ok)
        #expect(try aliceA.subscribe(["y"]).ok)
        _ = try aliceB.waitForSubscriptionsEvent()
        _ = try aliceB.waitForSubscriptionsEvent()

        let third = try aliceB.subscribe(["z"])
        #expect(third.ok, "\(third)")
        #expect(third.failures.isEmpty)
        for session in [aliceA, aliceB] {
            let event = try session.waitForSubscriptionsEvent()
            #expect(event.added == ["z"], "the cap's event goes to all the user's sessions")
            #expect(event.removed == ["x"], "the earliest-made is dropped")
        }
        let listed = try aliceA.request("getSubscriptions")
        #expect((listed["subscriptions"]?.arrayValue ?? []).map(\.userIdText) == ["y", "z"])

        let dan = try cluster.node(2).session("dan", platform: "cli")
        let refused = try dan.subscribe(["y", "dan", "x"])
        #expect(refused.ok, "\(refused)")
        #expect(refused.failures == ["y": "TARGET_SUBSCRIBER_LIMIT", "dan": "CANNOT_SUBSCRIBE_SELF"])
        #expect(refused.statuses.map(\.userIdText) == ["x"], "x lost alice as a subscriber: room for dan")
    }

    @Test("catch-up after a new login on another node; none when nothing changed")
    func catchUpAcrossNodes() throws {
        let cluster = try Self.cluster(nodes: 3)
        let sam = try cluster.node(0).session("sam", platform: "web")
        #expect(try sam.subscribe(["bob", "carol"]).ok)
        sam.close()
        let watcher = try cluster.node(2).session("watcher", platform: "cli")
        #expect(try watcher.subscribe(["sam"]).ok)
        #expect(try eventually { try watcher.userStatus(of: "sam").statusText == "offline" })

        let bob = try cluster.node(1).session("bob", platform: "ios")
        #expect(try bob.setCustomStatus("Away").ok)

        let samAgain = try cluster.node(2).connect()
        let login = try samAgain.login(userId: "sam", platform: "macos")
        #expect(login.ok, "\(login)")
        let event = try samAgain.waitForEvent(timeout: .seconds(10)) { $0.name == "userStatus" }
        let records = event["statuses"]?.arrayValue ?? []
        #expect(records.map(\.userIdText) == ["bob"], "only the target that changed since sam's session ended")
        #expect(records.first?.customStatusText == "Away")
        #expect(records.first?.statusText == "online")

        samAgain.close()
        // Ask rather than wait for an event: the watcher may still hold the `offline` event of
        // sam's first session, and matching it would let `quiet` log in before samAgain's end.
        #expect(try eventually { try watcher.userStatus(of: "sam").statusText == "offline" })
        let quiet = try cluster.node(1).connect()
        #expect(try quiet.login(userId: "sam", platform: "web").ok)
        #expect(try quiet.settledEvents(named: "userStatus").isEmpty, "nothing changed since: no catch-up")
    }

    @Test("a custom status expires after customStatusTtlSeconds: subscribers and the user's sessions hear it")
    func customStatusExpiry() throws {
        let cluster = try Self.cluster(nodes: 2, config: ["userStatus": ["customStatusTtlSeconds": 1]])
        let sam = try cluster.node(0).session("sam", platform: "web")
        #expect(try sam.subscribe(["bob"]).ok)
        let bob = try cluster.node(1).session("bob", platform: "ios")
        let bobOther = try cluster.node(0).session("bob", platform: "web")
        let set = try bob.setCustomStatus("Brb")
        #expect(set.ok, "\(set)")
        let setAt = try #require(set["status"]?.integer("lastCustomStatusUpdateTime"))
        _ = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Brb" }
        let cleared = try sam.waitForStatus(of: "bob") {
            $0["customStatus"] == .null && ($0.integer("lastCustomStatusUpdateTime") ?? 0) > setAt
        }
        let clearedAt = try #require(cleared.integer("lastCustomStatusUpdateTime"))
        #expect(clearedAt >= setAt + 1000 && clearedAt < setAt + 1500, "cleared as of its expiry")
        for session in [bob, bobOther] {
            _ = try session.waitForStatus(of: "bob") { $0["customStatus"] == .null && $0.integer("lastCustomStatusUpdateTime") == clearedAt }
        }
        #expect(try sam.userStatus(of: "bob")["customStatus"] == .null)
    }

    @Test("a session resumed on another node gets the catch-up; its user stays online while it is held")
    func resumeOnAnotherNode() throws {
        let cluster = try Self.cluster(nodes: 3, config: ["presence": ["timeoutSeconds": 60]])
        let watcher = try cluster.node(2).session("watcher", platform: "cli")
        #expect(try watcher.subscribe(["sam"]).ok)
        let first = try cluster.node(0).connect()
        let token = try #require(try first.login(userId: "sam", platform: "ios")["resumeToken"]?.stringValue)
        _ = try watcher.waitForStatus(of: "sam") { $0.statusText == "online" }
        #expect(try first.subscribe(["bob"]).ok)
        first.drop()
        #expect(eventually(timeout: 10) { (try? cluster.node(0).metric("rollcall_sessions{state=\"held\"}")) == 1 })

        let bob = try cluster.node(1).session("bob", platform: "web")
        #expect(try bob.setCustomStatus("Away").ok)
        let held = try watcher.userStatus(of: "sam")
        #expect(held.statusText == "online", "a held session counts")
        #expect(held.platformList == ["ios"])

        let second = try cluster.node(2).connect()
        let resumed = try second.login(userId: "sam", platform: "ios", resumeToken: token)
        #expect(resumed["resumed"]?.boolValue == true, "\(resumed)")
        let record = try second.waitForStatus(of: "bob") { $0.customStatusText == "Away" }
        #expect(record.statusText == "online")
        #expect(try watcher.settledEvents(named: "userStatus").isEmpty, "hold and resume change nothing about sam")
    }

    @Test("a node killed abruptly: its users go offline when their holds end (clearCustomStatusOnOffline applies)")
    func nodeKilled() throws {
        let cluster = try Self.cluster(nodes: 2, config: [
            "presence": ["timeoutSeconds": 1], "userStatus": ["clearCustomStatusOnOffline": true],
        ])
        let sam = try cluster.node(0).session("sam", platform: "web")
        #expect(try sam.subscribe(["bob"]).ok)
        _ = try cluster.node(1).session("bob", platform: "android", customStatus: "Driving")
        _ = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Driving" }
        cluster.node(1).kill()
        let record = try sam.waitForStatus(of: "bob", timeout: .seconds(15)) { $0.statusText != "online" }
        #expect(record.statusText == "offline")
        #expect(record.platformList.isEmpty)
        #expect(record["customStatus"] == .null, "cleared on going offline")
        #expect(record.integer("lastCustomStatusUpdateTime") == record.integer("lastOnlineStatusUpdateTime"))
    }

    @Test("after a node's pub/sub link was cut, its sessions get the records they may have missed")
    func pubSubLinkCut() throws {
        let cluster = try Self.cluster(nodes: 2)
        let sam = try cluster.node(0).session("sam", platform: "web")
        #expect(try sam.subscribe(["bob"]).ok)
        let bob = try cluster.node(1).session("bob", platform: "ios")
        #expect(try bob.setCustomStatus("Away").ok)
        _ = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Away" }
        #expect(try sam.settledEvents(named: "userStatus").count <= 1)

        _ = try RedisWire.command(port: cluster.redisPort, ["CLIENT", "KILL", "TYPE", "pubsub"])
        let record = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Away" }
        #expect(record.statusText == "online", "bob's current record again, once the link is back")
        let own = try bob.waitForStatus(of: "bob") { $0.customStatusText == "Away" }
        #expect(own.platformList == ["ios"], "and the user's own record to its sessions")
    }

    @Test("userStatus webhooks: each change is sent once, by the node whose script made it")
    func webhooksOncePerChange() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let cluster = try Self.cluster(nodes: 2, config: ["webhooks": [
            "url": receiver.url, "secret": "cluster-webhook-secret", "events": ["userStatus"], "batchMaxDelaySeconds": 0.05,
        ]])
        let alice = try cluster.node(0).session("alice", platform: "web")
        let bob = try cluster.node(1).session("bob", platform: "ios")
        #expect(try bob.setCustomStatus("Busy").ok)
        alice.close()
        func statuses(_ requests: [WebhookReceiver.Request]) -> [JSON] {
            requests.flatMap(\.events).compactMap { $0["event"]?.stringValue == "userStatus" ? $0["status"] : nil }
        }
        #expect(receiver.wait { statuses($0).contains { $0.userIdText == "alice" && $0.statusText == "offline" } })
        #expect(try bob.setCustomStatus("Done").ok)
        #expect(receiver.wait { statuses($0).contains { $0.customStatusText == "Done" } })
        let sent = statuses(receiver.requests).map { "\($0.userIdText ?? "?"):\($0.statusText ?? "?"):\($0.customStatusText ?? "-")" }
        #expect(sent.sorted() == ["alice:offline:-", "alice:online:-", "bob:online:-", "bob:online:Busy", "bob:online:Done"],
                "one webhook per change: \(sent)")
    }

    @Test("replies and events have the one-node layout (times aside)")
    func sameLayoutAsOneNode() throws {
        let single = try BrokerProcess(config: ["userStatus": ["customStatusPerSecond": 1000]])
        let cluster = try Self.cluster(nodes: 2)
        let expected = try Self.layoutScenario { _ in single }
        let actual = try Self.layoutScenario { cluster.node($0) }
        #expect(actual.count == expected.count)
        for (got, wanted) in zip(actual, expected) {
            #expect(got == wanted)
        }
    }

    @Test("subscriptions and custom statuses survive a restart of every node; held sessions time out to offline")
    func survivesFullRestart() throws {
        let config: [String: Any] = ["presence": ["timeoutSeconds": 1]]
        let cluster = try Self.cluster(nodes: 2, config: config)
        let alice = try cluster.node(0).session("alice", platform: "web")
        #expect(try alice.subscribe(["bob", "carol"], duration: 3600).ok)
        let bob = try cluster.node(1).session("bob", platform: "ios", customStatus: "Sailing")
        _ = bob
        _ = try alice.waitForStatus(of: "bob") { $0.customStatusText == "Sailing" }

        // SIGTERM to every node (Redis keeps the data), then every node again with its id.
        for index in 0..<cluster.nodeCount { _ = cluster.node(index).stop() }
        for index in 0..<cluster.nodeCount { try cluster.restart(node: index) }
        #expect(cluster.waitUntilFormed(timeout: 10), "\(cluster.describeNodes())")

        let aliceAgain = try cluster.node(1).session("alice", platform: "web")
        let listed = try aliceAgain.request("getSubscriptions")
        #expect(listed.ok, "\(listed)")
        let entries = listed["subscriptions"]?.arrayValue ?? []
        #expect(entries.map(\.userIdText) == ["bob", "carol"])
        #expect(entries.first?["status"]?.customStatusText == "Sailing")
        // bob's session was handed over at SIGTERM (held, user online), then its hold ended
        // and a new node's reaper ended it.
        #expect(try eventually(timeout: 15) { try aliceAgain.userStatus(of: "bob").statusText == "offline" })
        let record = try aliceAgain.userStatus(of: "bob")
        #expect(record.customStatusText == "Sailing")
        #expect(record.platformList.isEmpty)
    }

    /// One scenario's replies and events, with times zeroed, for ``sameLayoutAsOneNode()``.
    static func layoutScenario(_ node: (Int) -> BrokerProcess) throws -> [JSON] {
        var seen: [JSON] = []
        let sam = try node(0).session("sam", platform: "web")
        seen.append(try sam.request("subscribeUserStatus", ["userIds": ["bob", "", "sam", "carol"], "duration": 600]).result)
        let bob = try node(1).session("bob", platform: "ios", customStatus: "Ü \"q\" \u{1F600} \\ é")
        seen.append(try sam.waitForStatus(of: "bob") { $0.statusText == "online" })
        seen.append(try bob.setCustomStatus("tab\there").result)
        seen.append(try sam.waitForStatus(of: "bob") { $0.customStatusText == "tab\there" })
        seen.append(try sam.request("getSubscriptions").result)
        seen.append(try sam.request("getUserStatus", ["userIds": ["bob", "nobody", "sam", "\u{1}"]]).result)
        seen.append(try sam.request("unsubscribeUserStatus", ["userIds": ["carol", "nobody"]]).result)
        bob.close()
        seen.append(try sam.waitForStatus(of: "bob") { $0.statusText == "offline" })
        return seen.map(zeroingTimes)
    }

    /// A cluster of `nodes` nodes (``ClusterProcess``) with user status rates high enough for
    /// these tests, deep-merged with the test's `config`.
    static func cluster(nodes: Int, config: [String: Any] = [:]) throws -> ClusterProcess {
        let rates: [String: Any] = ["userStatus": ["customStatusPerSecond": 1000, "queryRate": ["calls": 1000, "perSeconds": 1]]]
        return try ClusterProcess(config: BrokerProcess.merge(rates, config), nodeCount: nodes)
    }

    static func zeroingTimes(_ value: JSON) -> JSON {
        switch value {
        case .object(let object):
            let times: Set<String> = ["lastUpdateTime", "lastOnlineStatusUpdateTime", "lastCustomStatusUpdateTime", "expiresAt"]
            return .object(JSONObject(object.members.map { member in
                (member.key, times.contains(member.key) && member.value.numberValue != nil ? .int(0) : zeroingTimes(member.value))
            }))
        case .array(let elements):
            return .array(elements.map(zeroingTimes))
        default:
            return value
        }
    }
}
