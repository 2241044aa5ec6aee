import Testing
@testable import RollcallCore
import RollcallProtocol

@Suite("User status: events, devices, session ends, catch-up")
struct UserStatusEventTests {
    @Test func subscribersAndOwnOtherSessionsHearChanges() {
        let h = StatusHarness()
        let alice = h.login("alice")
        let phone = h.login("alice", platform: "ios")
        let bob = h.login("bob")
        let bobTablet = h.login("bob", platform: "android")
        let carol = h.login("carol")
        h.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        h.clearEvents()
        h.ok(alice, "setCustomStatus", ["customStatus": "Busy"])
        for connection in [bob, bobTablet, phone] {
            let events = h.events(connection, named: "userStatus")
            #expect(events.count == 1)
            #expect(events.first?.statusesByUser["alice"]?["customStatus"] == "Busy")
            #expect(events.first?.statusesByUser["alice"]?.strings("platforms") == ["ios", "web"])
        }
        #expect(h.events(alice).isEmpty)
        #expect(h.events(carol).isEmpty)
    }

    @Test func oneEncodingSharedByEveryRecipient() {
        let h = StatusHarness()
        let star = h.login("star")
        var fans: [ConnectionID] = []
        for index in 0..<20 {
            let fan = h.login("fan\(index)")
            h.ok(fan, "subscribeUserStatus", ["userIds": ids("star")])
            fans.append(fan)
        }
        let before = h.sends.count
        h.ok(star, "setCustomStatus", ["customStatus": "live"])
        let eventSends = h.sends[before...].filter { $0.0 != star }
        #expect(eventSends.count == 20)
        let addresses = Set(eventSends.map { $0.1.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } })
        #expect(addresses.count == 1)
    }

    @Test func manySubscribersCostOneEncodeAndOneAppendEach() {
        let h = StatusHarness()
        let star = h.login("star")
        for index in 0..<300 {
            let fan = h.login("fan\(index)")
            h.send(fan, "subscribeUserStatus", ["userIds": ids("star")])
        }
        #expect(h.broker.userStatus.subscriptionCount == 300)
        let before = h.sends.count
        h.ok(star, "setCustomStatus", ["customStatus": "on stage"])
        let events = h.sends[before...].filter { $0.0 != star }
        #expect(events.count == 300)
        let buffers = Set(events.map { $0.1.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) } })
        #expect(buffers.count == 1)
    }

    @Test func platformsAreSortedDistinctAndIncludeHeldSessions() {
        let h = StatusHarness()
        let bob = h.login("bob")
        h.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        let web = h.login("alice", platform: "web")
        let ios = h.login("alice", platform: "ios")
        _ = h.login("alice", platform: "ios")
        #expect(h.events(bob, named: "userStatus").last?.statusesByUser["alice"]?.strings("platforms") == ["ios", "web"])
        // A second ios session changes no platform: no event.
        h.clearEvents()
        _ = h.login("alice", platform: "ios")
        #expect(h.events(bob).isEmpty)
        // A dropped (held) session keeps the user online and its platform listed.
        h.drop(web)
        #expect(h.events(bob).isEmpty)
        let record = h.ok(bob, "getUserStatus", ["userIds": ids("alice")]).statusesByUser["alice"]
        #expect(record?["status"] == "online")
        #expect(record?.strings("platforms") == ["ios", "web"])
        // When its hold ends, the platform goes.
        h.advance(seconds: 30)
        #expect(h.events(bob, named: "userStatus").last?.statusesByUser["alice"]?.strings("platforms") == ["ios"])
        _ = ios
    }

    @Test func logoutCloseAndTimeoutEndStatuses() {
        let h = StatusHarness()
        let watcher = h.login("watcher")
        h.ok(watcher, "subscribeUserStatus", ["userIds": ids("a", "b", "c")])
        let a = h.login("a"), b = h.login("b"), c = h.login("c")
        h.clearEvents()
        h.clock.advance(bySeconds: 1)
        h.ok(a, "logout")
        h.close(b)
        h.drop(c)
        var events = h.events(watcher, named: "userStatus")
        #expect(events.compactMap { $0.statusesByUser["a"]?["status"] } == ["loggedOut"])
        #expect(events.compactMap { $0.statusesByUser["b"]?["status"] } == ["offline"])
        #expect(events.allSatisfy { $0.statusesByUser["c"] == nil })
        #expect(events.first?.statusesByUser["a"]?.int("lastOnlineStatusUpdateTime") == Int(h.clock.now))
        #expect(events.first?.statusesByUser["a"]?.strings("platforms") == [])
        h.advance(seconds: 30)
        events = h.events(watcher, named: "userStatus")
        #expect(events.compactMap { $0.statusesByUser["c"]?["status"] } == ["offline"])
    }

    @Test func lastSessionDecidesAndOwnRemainingSessionsHear() {
        let h = StatusHarness()
        let web = h.login("alice", platform: "web")
        let ios = h.login("alice", platform: "ios")
        h.clearEvents()
        h.ok(web, "logout")
        let event = h.events(ios, named: "userStatus").last
        #expect(event?.statusesByUser["alice"]?["status"] == "online")
        #expect(event?.statusesByUser["alice"]?.strings("platforms") == ["ios"])
        h.close(ios)
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.status == .offline)
    }

    @Test func loginAnnouncesOnlineToSubscribersAndOtherDevices() {
        let h = StatusHarness()
        let bob = h.login("bob")
        h.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        h.clearEvents()
        let web = h.login("alice", platform: "web", customStatus: "Hi")
        let event = h.events(bob, named: "userStatus").first
        #expect(event?.statusesByUser["alice"]?["status"] == "online")
        #expect(event?.statusesByUser["alice"]?["customStatus"] == "Hi")
        #expect(event?.statusesByUser["alice"]?.int("lastOnlineStatusUpdateTime") == Int(h.clock.now))
        // The new session itself gets only its reply.
        #expect(h.events(web).isEmpty)
        _ = h.login("alice", platform: "ios")
        #expect(h.events(web, named: "userStatus").first?.statusesByUser["alice"]?.strings("platforms") == ["ios", "web"])
    }

    @Test func resumeKeepsStatusAndMayChangeCustomStatus() {
        let h = StatusHarness()
        let bob = h.login("bob")
        h.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        let first = h.login("alice", platform: "ios")
        let token = h.lastLoginResult["resumeToken"]!.stringValue!
        h.drop(first)
        h.clearEvents()
        h.clock.advance(bySeconds: 5)
        let (_, reply) = h.resume("alice", token: token)
        #expect(reply["result"]?["resumed"] == true)
        #expect(h.events(bob).isEmpty)
        // No timeout later either: the hold was cancelled.
        h.advance(seconds: 60)
        #expect(h.events(bob).isEmpty)
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.status == .online)
    }

    @Test func resumedSessionCatchesUpOnWhatItMissedWhileHeld() {
        let h = StatusHarness()
        let first = h.login("alice")
        let token = h.lastLoginResult["resumeToken"]!.stringValue!
        h.ok(first, "subscribeUserStatus", ["userIds": ids("bob", "carol")])
        let bob = h.login("bob")
        h.clock.advance(bySeconds: 400)
        h.drop(first)
        h.clock.advance(bySeconds: 5)
        h.ok(bob, "setCustomStatus", ["customStatus": "missed"])
        h.clock.advance(bySeconds: 5)
        let (resumed, reply) = h.resume("alice", token: token)
        #expect(reply["result"]?["resumed"] == true)
        let events = h.events(resumed, named: "userStatus")
        #expect(events.count == 1)
        #expect(events.first?.statusesByUser.keys.sorted() == ["bob"])
        #expect(events.first?.statusesByUser["bob"]?["customStatus"] == "missed")
    }

    @Test func catchUpListsTargetsChangedSinceThePreviousSessionEnded() {
        let h = StatusHarness()
        var alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob", "carol", "dave")])
        let bob = h.login("bob")
        _ = h.login("dave")
        h.clock.advance(bySeconds: 1)
        h.close(alice)
        h.clock.advance(bySeconds: 1)
        h.ok(bob, "setCustomStatus", ["customStatus": "changed while alice was away"])
        _ = h.login("carol")
        alice = h.login("alice")
        let events = h.events(alice)
        #expect(events.count == 1)
        #expect(events.first?["event"] == "userStatus")
        #expect(events.first?.statusesByUser.keys.sorted() == ["bob", "carol"])
        #expect(events.first?.statusesByUser["bob"]?["customStatus"] == "changed while alice was away")
        // Nothing changed since: a later login gets no catch-up.
        h.close(alice)
        h.clock.advance(bySeconds: 1)
        alice = h.login("alice")
        #expect(h.events(alice).isEmpty)
    }

    @Test func catchUpComesAfterTheLoginReply() {
        let h = StatusHarness()
        var alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob")])
        h.close(alice)
        h.clock.advance(bySeconds: 1)
        _ = h.login("bob")
        let before = h.sends.count
        alice = h.login("alice")
        let toAlice = h.sends[before...].filter { $0.0 == alice }.map { String(decoding: $0.1, as: UTF8.self) }
        #expect(toAlice.count == 2)
        #expect(toAlice.first?.contains("\"ok\":true") == true)
        #expect(toAlice.last?.hasPrefix("{\"event\":\"userStatus\"") == true)
    }

    @Test func shutdownMarksEveryoneOfflineAndFlushes() {
        let store = MemoryStatusStore()
        let h = StatusHarness(store: store)
        _ = h.login("alice", customStatus: "Busy")
        h.shutdown()
        let stored = store.load().users.first { $0.userId == Name("alice")! }
        #expect(stored?.status == .offline)
        #expect(stored?.customStatus == "Busy")
        #expect(h.broker.userStatus.lastFlushError == nil)
    }

    @Test func restartKeepsSubscriptionsCustomStatusAndTurnsOnlineIntoOffline() {
        let store = MemoryStatusStore()
        let h = StatusHarness(store: store) { $0.userStatus.customStatusTtlSeconds = 600 }
        let alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": 300])
        _ = h.login("bob", customStatus: "On call")
        let lastSeen = h.clock.now
        // A crash: no session ends are recorded.
        h.clock.advance(bySeconds: 100)
        h.restart()
        let bobRecord = h.broker.userStatus.record(of: Name("bob")!)
        #expect(bobRecord.stored.status == .offline)
        #expect(bobRecord.stored.lastOnlineStatusUpdateTime == lastSeen)
        #expect(bobRecord.stored.customStatus == "On call")
        let again = h.login("alice")
        let listed = h.ok(again, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(listed.map { $0["userId"] } == ["bob"])
        #expect(listed.first?.int("expiresAt") == Int(lastSeen) + 300_000)
        // Expiries are re-armed from the stored times.
        h.advance(seconds: 200)
        #expect(h.ok(again, "getSubscriptions")["subscriptions"] == [])
        h.advance(seconds: 300)
        #expect(h.broker.userStatus.record(of: Name("bob")!).stored.customStatus == nil)
    }

    @Test func restartDropsWhatExpiredWhileDown() {
        let store = MemoryStatusStore()
        let h = StatusHarness(store: store) { $0.userStatus.customStatusTtlSeconds = 60 }
        let alice = h.login("alice", customStatus: "brief")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": 60])
        h.shutdown()
        h.clock.advance(bySeconds: 120)
        h.restart()
        #expect(h.broker.userStatus.subscriptionCount == 0)
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.customStatus == nil)
        #expect(store.load().subscriptions.isEmpty)
    }
}
