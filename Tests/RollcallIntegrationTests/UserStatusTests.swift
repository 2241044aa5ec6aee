import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §6 through the real binary: one user on two platforms, a subscriber, the
/// user's own other sessions, catch-up and held sessions.
@Suite("User status")
struct UserStatusTests {
    /// Lets a test change the custom status several times a second.
    static let relaxedRates: [String: Any] = ["userStatus": ["customStatusPerSecond": 1000]]

    @Test("a subscriber follows bob on web and ios: platforms, custom status, offline, loggedOut", arguments: Topology.singleAndCluster)
    func twoPlatformsAndASubscriber(topology: Topology) throws {
        let broker = try topology.start(config: Self.relaxedRates)
        let sam = try broker.session("sam", platform: "android")
        let subscribed = try sam.subscribe(["bob"])
        #expect(subscribed.ok, "\(subscribed)")
        #expect(subscribed.status(of: "bob")?.statusText == "loggedOut", "never seen reads loggedOut")

        let bobWeb = try broker.session("bob", platform: "web")
        var record = try sam.waitForStatus(of: "bob") { $0.statusText == "online" }
        #expect(record.platformList == ["web"])

        let bobIOS = try broker.session("bob", platform: "ios")
        record = try sam.waitForStatus(of: "bob") { $0.platformList.count == 2 }
        #expect(record.platformList == ["ios", "web"], "sorted, distinct")
        #expect(record.statusText == "online")
        let synced = try bobWeb.waitForStatus(of: "bob") { $0.platformList == ["ios", "web"] }
        #expect(synced.statusText == "online", "multi-device sync to bob's other session")

        let set = try bobIOS.setCustomStatus("Busy")
        #expect(set.ok, "\(set)")
        #expect(set["status"]?.customStatusText == "Busy")
        record = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Busy" }
        #expect(record.integer("lastCustomStatusUpdateTime") == set["status"]?.integer("lastCustomStatusUpdateTime"))
        _ = try bobWeb.waitForStatus(of: "bob") { $0.customStatusText == "Busy" }
        #expect(try bobIOS.settledEvents(named: "userStatus").isEmpty, "the session that made the change has the reply")

        let again = try bobIOS.setCustomStatus("Busy")
        #expect(again.ok)
        #expect(try sam.settledEvents(named: "userStatus").isEmpty, "setting the same value again sends nothing")

        let cleared = try bobIOS.setCustomStatus(nil)
        #expect(cleared.ok, "\(cleared)")
        #expect(cleared["status"]?["customStatus"] == .null)
        _ = try sam.waitForStatus(of: "bob") { $0["customStatus"] == .null }
        #expect(try bobIOS.setCustomStatus("Back").ok)
        _ = try sam.waitForStatus(of: "bob") { $0.customStatusText == "Back" }
        #expect(try bobIOS.setCustomStatus("").ok, "an empty string clears too")
        _ = try sam.waitForStatus(of: "bob") { $0["customStatus"] == .null }

        bobIOS.close()
        record = try sam.waitForStatus(of: "bob") { $0.platformList == ["web"] }
        #expect(record.statusText == "online")
        _ = try bobWeb.waitForStatus(of: "bob") { $0.platformList == ["web"] }

        bobWeb.close()
        record = try sam.waitForStatus(of: "bob") { $0.statusText != "online" }
        #expect(record.statusText == "offline", "close frames on both platforms: offline")
        #expect(record.platformList.isEmpty)
        let offlineAt = try #require(record.integer("lastOnlineStatusUpdateTime"))
        #expect(record.integer("lastUpdateTime") == offlineAt)

        let bobAgain = try broker.session("bob", platform: "web")
        _ = try sam.waitForStatus(of: "bob") { $0.statusText == "online" }
        #expect(try bobAgain.request("logout").ok)
        record = try sam.waitForStatus(of: "bob") { $0.statusText != "online" }
        #expect(record.statusText == "loggedOut", "logout of the last session: loggedOut")

        let read = try sam.userStatus(of: "bob")
        #expect(read.statusText == "loggedOut")
        #expect(read.platformList.isEmpty)
        #expect((read.integer("lastOnlineStatusUpdateTime") ?? 0) >= offlineAt)
        #expect((read.integer("lastCustomStatusUpdateTime") ?? 0) > 0)
    }

    @Test("subscribe/unsubscribe from one session: subscriptions events to the other; getSubscriptions pages", arguments: Topology.singleAndCluster)
    func subscriptionsAcrossOwnSessions(topology: Topology) throws {
        let broker = try topology.start()
        let phone = try broker.session("alice", platform: "ios")
        let laptop = try broker.session("alice", platform: "macos")
        let before = try phone.serverTime()

        let subscribed = try phone.subscribe(["carol", "bob"], duration: 3600)
        #expect(subscribed.ok, "\(subscribed)")
        #expect(Set(subscribed.statuses.compactMap(\.userIdText)) == ["bob", "carol"])
        let event = try laptop.waitForSubscriptionsEvent()
        #expect(Set(event.added) == ["bob", "carol"])
        #expect(event.removed.isEmpty)
        #expect(try phone.settledEvents(named: "subscriptions").isEmpty, "the subscribing session has the reply")

        // Renewal: no event.
        #expect(try phone.subscribe(["bob"], duration: 7200).ok)
        #expect(try laptop.settledEvents(named: "subscriptions").isEmpty, "a renewal sends no subscriptions event")

        // Pages of one, in byte order of user id.
        var seen: [JSON] = []
        var page: JSON = .null
        repeat {
            var args: JSONObject = ["pageSize": 1]
            if case .string = page { args["page"] = page }
            let reply = try laptop.request("getSubscriptions", .object(args))
            #expect(reply.ok, "\(reply)")
            let entries = reply["subscriptions"]?.arrayValue ?? []
            #expect(entries.count <= 1)
            seen += entries
            page = reply["nextPage"] ?? .null
        } while page.stringValue != nil && seen.count < 10
        #expect(seen.map { $0.userIdText } == ["bob", "carol"])
        let bobExpiry = try #require(seen.first?.integer("expiresAt"))
        let carolExpiry = try #require(seen.last?.integer("expiresAt"))
        #expect(bobExpiry >= before + 7_200_000 && bobExpiry < before + 7_260_000, "renewed to 7200 s")
        #expect(carolExpiry >= before + 3_600_000 && carolExpiry < before + 3_660_000)
        #expect(seen.first?["status"]?.statusText == "loggedOut")

        let filtered = try laptop.request("getSubscriptions", ["userIds": ["carol", "zed", ""]])
        #expect(filtered.ok, "\(filtered)")
        #expect((filtered["subscriptions"]?.arrayValue ?? []).map { $0.userIdText } == ["carol"])
        #expect(filtered["nextPage"] == .null)
        #expect(filtered.failures == ["": "INVALID_ARGUMENT"])

        let unsubscribed = try laptop.request("unsubscribeUserStatus", ["userIds": ["carol", "mallory"]])
        #expect(unsubscribed.ok, "\(unsubscribed)")
        #expect(unsubscribed.failures.isEmpty, "an id that was not subscribed is not a failure")
        let removal = try phone.waitForSubscriptionsEvent()
        #expect(removal.added.isEmpty)
        #expect(removal.removed == ["carol"])

        #expect(try phone.request("unsubscribeUserStatus").ok, "no list: all")
        #expect(try laptop.waitForSubscriptionsEvent().removed == ["bob"])
        let none = try phone.request("getSubscriptions")
        #expect(none["subscriptions"]?.arrayValue?.isEmpty == true)
    }

    @Test("catch-up: right after login, one userStatus event with targets changed since the last session ended", arguments: Topology.singleAndCluster)
    func catchUpAfterLogin(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice", platform: "web")
        #expect(try alice.subscribe(["bob", "carol"]).ok)
        let carol = try broker.session("carol", platform: "linux") // changes while alice is online
        #expect(try carol.request("logout").ok)
        alice.close()
        let watcher = try broker.session("dave", platform: "cli")
        try #require(try eventually(timeout: 10) { try watcher.userStatus(of: "alice").statusText == "offline" })
        let aliceEnded = try #require(try watcher.userStatus(of: "alice").integer("lastOnlineStatusUpdateTime"))
        // Make sure bob's change is stamped strictly after alice's session ended.
        #expect(try eventually(timeout: 5) { try watcher.serverTime() > aliceEnded })

        let bob = try broker.session("bob", platform: "ios", customStatus: "On a train")
        let aliceAgain = try broker.connect()
        let login = try aliceAgain.login(userId: "alice", platform: "web")
        #expect(login.ok, "\(login)")
        let catchUp = try aliceAgain.waitForEvent(timeout: .seconds(10)) { $0.name == "userStatus" }
        let records = catchUp["statuses"]?.arrayValue ?? []
        #expect(records.map { $0.userIdText } == ["bob"], "carol changed before alice's session ended: \(catchUp)")
        #expect(records.first?.statusText == "online")
        #expect(records.first?.customStatusText == "On a train")
        #expect(records.first?.platformList == ["ios"])
        #expect(try aliceAgain.settledEvents(named: "userStatus").isEmpty, "one catch-up event")

        // Nothing changed since this session ended: no catch-up at the next login.
        _ = bob
        aliceAgain.close()
        #expect(try eventually(timeout: 10) { try watcher.userStatus(of: "alice").statusText == "offline" })
        let third = try broker.connect()
        #expect(try third.login(userId: "alice", platform: "web").ok)
        #expect(try third.settledEvents(named: "userStatus").isEmpty, "no change since the last session: no event")
    }

    @Test("getUserStatus over the wire: batch, duplicates once, invalid ids in failed", arguments: Topology.singleAndCluster)
    func getUserStatusBatch(topology: Topology) throws {
        let broker = try topology.start()
        let bob = try broker.session("bob", platform: "ios", customStatus: "Busy")
        let alice = try broker.session("alice", platform: "web")
        let reply = try alice.request("getUserStatus", ["userIds": ["bob", "zoe", "bob", "", "alice"]])
        #expect(reply.ok, "\(reply)")
        #expect(reply.statuses.map { $0.userIdText } == ["bob", "zoe", "alice"])
        let record = try #require(reply.status(of: "bob"))
        #expect(record.statusText == "online")
        #expect(record.customStatusText == "Busy")
        #expect(record.platformList == ["ios"])
        for key in ["lastUpdateTime", "lastOnlineStatusUpdateTime", "lastCustomStatusUpdateTime"] {
            #expect((record.integer(key) ?? 0) > 0, "\(key)")
        }
        let zoe = try #require(reply.status(of: "zoe"))
        #expect(zoe.statusText == "loggedOut")
        #expect(zoe["customStatus"] == .null)
        #expect(zoe.integer("lastUpdateTime") == 0)
        #expect(reply.failures == ["": "INVALID_ARGUMENT"])
        _ = bob
    }

    @Test("held session: an abrupt drop keeps bob online until presence.timeoutSeconds, then offline", arguments: Topology.singleAndCluster)
    func heldSessionGoesOfflineAfterTimeout(topology: Topology) throws {
        let timeout = 1.5
        let broker = try topology.start(config: ["presence": ["timeoutSeconds": timeout]])
        let sam = try broker.session("sam", platform: "web")
        #expect(try sam.subscribe(["bob"]).ok)
        let bob = try broker.session("bob", platform: "ios")
        _ = try sam.waitForStatus(of: "bob") { $0.statusText == "online" }
        _ = sam.drainEvents()

        let droppedAt = try sam.serverTime()
        bob.drop()
        let readAt = Date()
        let whileHeld = try sam.userStatus(of: "bob")
        if Date().timeIntervalSince(readAt) < timeout / 2 {
            #expect(whileHeld.statusText == "online", "a held session still counts")
            #expect(whileHeld.platformList == ["ios"])
        }
        let offline = try sam.waitForStatus(of: "bob", timeout: .seconds(15)) { $0.statusText != "online" }
        #expect(offline.statusText == "offline", "no logout: offline")
        #expect(offline.platformList.isEmpty)
        let wentOffline = try #require(offline.integer("lastOnlineStatusUpdateTime"))
        #expect(wentOffline >= droppedAt + Int(timeout * 1000) - 100, "held for the presence timeout")
        let events = try sam.settledEvents(named: "userStatus")
        #expect(events.isEmpty, "one change: one event (\(events))")
    }
}
