import Testing
@testable import RollcallCore
import RollcallProtocol

@Suite("User status: subscriptions")
struct UserStatusSubscriptionTests {
    @Test func subscribeReturnsCurrentRecordsAndFailures() {
        let h = StatusHarness()
        let alice = h.login("alice")
        _ = h.login("bob", platform: "ios", customStatus: "Busy")
        let result = h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob", "alice", "carol", "")])
        #expect(result.statusesByUser.keys.sorted() == ["bob", "carol"])
        #expect(result.statusesByUser["bob"]?["customStatus"] == "Busy")
        #expect(result.statusesByUser["carol"]?["status"] == "loggedOut")
        #expect(result.failures == ["alice": "CANNOT_SUBSCRIBE_SELF", "": "INVALID_ARGUMENT"])
    }

    @Test func durationRangeAndDefault() {
        let h = StatusHarness()
        let alice = h.login("alice")
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": 59])["code"] == "INVALID_ARGUMENT")
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": 2_592_001])["code"] == "INVALID_ARGUMENT")
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": "60"])["code"] == "INVALID_REQUEST")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob")])
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("carol"), "duration": 60])
        let subscriptions = h.ok(alice, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(subscriptions.map { $0["userId"] } == ["bob", "carol"])
        #expect(subscriptions[0].int("expiresAt") == Int(h.clock.now) + 86_400_000)
        #expect(subscriptions[1].int("expiresAt") == Int(h.clock.now) + 60_000)
    }

    @Test func expiryRemovesSilently() {
        let h = StatusHarness()
        let alice = h.login("alice")
        let bob = h.login("bob")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": 60])
        h.clearEvents()
        #expect(h.broker.nextDeadline == h.clock.monotonic + 60_000)
        h.advance(seconds: 60)
        #expect(h.events(alice).isEmpty)
        #expect(h.ok(alice, "getSubscriptions")["subscriptions"] == [])
        h.ok(bob, "setCustomStatus", ["customStatus": "after expiry"])
        #expect(h.events(alice).isEmpty)
        #expect(h.broker.userStatus.subscriptionCount == 0)
    }

    @Test func renewalMovesExpiryButKeepsAgeForTheCap() {
        let h = StatusHarness { $0.userStatus.maxSubscriptionsPerUser = 2 }
        let alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("first"), "duration": 60])
        h.clock.advance(bySeconds: 1)
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("second"), "duration": 60])
        h.clock.advance(bySeconds: 50)
        // Renewing "first" keeps it the earliest made.
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("first"), "duration": 600])
        var listed = h.ok(alice, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(listed.first?.int("expiresAt") == Int(h.clock.now) + 600_000)
        // The old expiry no longer applies.
        h.advance(seconds: 20)
        listed = h.ok(alice, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(listed.map { $0["userId"] } == ["first"])
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("second")])
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("third")])
        listed = h.ok(alice, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(listed.map { $0["userId"] } == ["second", "third"])
    }

    /// Regression: subscriptions made in the same millisecond (one batch, or quick calls)
    /// came back from the store in byte order of target, so the cap then dropped the wrong one.
    @Test func sameMillisecondCreationOrderSurvivesRestart() {
        let store = MemoryStatusStore()
        let h = StatusHarness(store: store) { $0.userStatus.maxSubscriptionsPerUser = 3 }
        let alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("zed", "yan")])
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("amy")])
        h.shutdown()
        h.restart()
        let again = h.login("alice")
        h.ok(again, "subscribeUserStatus", ["userIds": ids("bob", "cal")])
        let listed = h.ok(again, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(listed.map { $0["userId"] } == ["amy", "bob", "cal"], "zed then yan were made first")
    }

    @Test func capDropsEarliestMadeAndTellsAllSessions() {
        let h = StatusHarness { $0.userStatus.maxSubscriptionsPerUser = 3 }
        let alice = h.login("alice")
        let phone = h.login("alice", platform: "ios")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u1", "u2")])
        h.clock.advance(bySeconds: 1)
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u3")])
        h.clock.advance(bySeconds: 1)
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u1")])  // renewal: still the oldest
        h.clearEvents()
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u4", "u5")])
        for connection in [alice, phone] {
            let events = h.events(connection, named: "subscriptions")
            #expect(events.count == 1)
            #expect(events.first?.strings("added") == ["u4", "u5"])
            #expect(events.first?.strings("removed") == ["u1", "u2"])
        }
        let listed = h.ok(alice, "getSubscriptions")["subscriptions"]!.arrayValue!
        #expect(listed.map { $0["userId"] } == ["u3", "u4", "u5"])
    }

    @Test func targetSubscriberLimit() {
        let h = StatusHarness { $0.userStatus.maxSubscribersPerUser = 2 }
        let a = h.login("a"), b = h.login("b"), c = h.login("c")
        h.ok(a, "subscribeUserStatus", ["userIds": ids("star")])
        h.ok(b, "subscribeUserStatus", ["userIds": ids("star")])
        #expect(h.ok(c, "subscribeUserStatus", ["userIds": ids("star", "other")]).failures == ["star": "TARGET_SUBSCRIBER_LIMIT"])
        // An existing subscriber may still renew.
        #expect(h.ok(a, "subscribeUserStatus", ["userIds": ids("star")]).failures.isEmpty)
        h.ok(a, "unsubscribeUserStatus", ["userIds": ids("star")])
        #expect(h.ok(c, "subscribeUserStatus", ["userIds": ids("star")]).failures.isEmpty)
    }

    @Test func subscriptionsEventGoesToOtherSessionsOnly() {
        let h = StatusHarness()
        let alice = h.login("alice")
        let phone = h.login("alice", platform: "ios")
        h.clearEvents()
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob", "carol")])
        #expect(h.events(alice, named: "subscriptions").isEmpty)
        let added = h.events(phone, named: "subscriptions")
        #expect(added.count == 1)
        #expect(added.first?.strings("added") == ["bob", "carol"])
        #expect(added.first?.strings("removed") == [])
        // Renewal alone changes no list.
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob")])
        #expect(h.events(phone).isEmpty)
        h.ok(phone, "unsubscribeUserStatus", ["userIds": ids("carol", "nobody")])
        let removed = h.events(alice, named: "subscriptions")
        #expect(removed.first?.strings("removed") == ["carol"])
        #expect(h.events(phone).isEmpty)
    }

    @Test func unsubscribeListOrAll() {
        let h = StatusHarness()
        let alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("b", "c", "d", "e")])
        let result = h.ok(alice, "unsubscribeUserStatus", ["userIds": ids("b", "zz", "")])
        #expect(result.failures == ["": "INVALID_ARGUMENT"])
        #expect(h.ok(alice, "getSubscriptions")["subscriptions"]!.arrayValue!.map { $0["userId"] } == ["c", "d", "e"])
        h.ok(alice, "unsubscribeUserStatus", ["userIds": []])
        #expect(h.ok(alice, "getSubscriptions")["subscriptions"] == [])
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("b", "c")])
        #expect(h.ok(alice, "unsubscribeUserStatus").failures.isEmpty)
        #expect(h.broker.userStatus.subscriptionCount == 0)
    }

    @Test func getSubscriptionsPagesInByteOrderAndFilters() {
        let h = StatusHarness()
        let alice = h.login("alice")
        // "Z" < "a" < "é" in byte order.
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("é", "b", "a", "Z", "c")])
        var seen: [String] = []
        var page: JSON = .null
        var calls = 0
        repeat {
            let result = page.isNull
                ? h.ok(alice, "getSubscriptions", ["pageSize": 2])
                : h.ok(alice, "getSubscriptions", ["pageSize": 2, "page": page])
            let items = result["subscriptions"]!.arrayValue!
            #expect(items.count <= 2)
            seen += items.compactMap { $0["userId"]?.stringValue }
            #expect(items.allSatisfy { $0["status"]?["userId"] == $0["userId"] })
            page = result["nextPage"] ?? .null
            calls += 1
        } while !page.isNull && calls < 10
        #expect(seen == ["Z", "a", "b", "c", "é"])
        #expect(calls == 3)

        let filtered = h.ok(alice, "getSubscriptions", ["userIds": ids("c", "nope", "a", "")])
        #expect(filtered["subscriptions"]!.arrayValue!.map { $0["userId"] } == ["c", "a"])
        #expect(filtered["nextPage"] == .null)
        #expect(filtered.failures == ["": "INVALID_ARGUMENT"])

        #expect(h.fail(alice, "getSubscriptions", ["pageSize": 0])["code"] == "INVALID_ARGUMENT")
        #expect(h.fail(alice, "getSubscriptions", ["pageSize": 201])["code"] == "INVALID_ARGUMENT")
        #expect(h.fail(alice, "getSubscriptions", ["page": "not a cursor"])["code"] == "INVALID_ARGUMENT")
    }

    @Test func subscriptionsOutliveSessions() {
        let h = StatusHarness()
        let alice = h.login("alice")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob")])
        h.close(alice)
        let again = h.login("alice")
        #expect(h.ok(again, "getSubscriptions")["subscriptions"]!.arrayValue!.map { $0["userId"] } == ["bob"])
    }
}
