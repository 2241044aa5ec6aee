@testable import RollcallCore
import RollcallProtocol
import Testing

/// `userStatus.maxSubscriptionsPerUser` exactly at the limit and one past it (docs/security.md).
@Suite struct SubscriptionCapLimitTests {
    @Test func exactlyTheCapKeepsEverySubscriptionAndOneMoreDropsTheEarliest() {
        let h = StatusHarness { $0.userStatus.maxSubscriptionsPerUser = 3 }
        let alice = h.login("alice")
        let phone = h.login("alice", platform: "ios")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u1")])
        h.clock.advance(bySeconds: 1)
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u2", "u3")])
        // At the cap: nothing is dropped, the other session hears only of the additions.
        #expect(h.events(phone, named: "subscriptions").last?.strings("removed") == [])
        #expect(h.ok(alice, "getSubscriptions")["subscriptions"]?.arrayValue?.count == 3)
        h.clearEvents()
        // One past: exactly the earliest-made subscription goes, and every session is told.
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("u4")])
        for connection in [alice, phone] {
            let event = h.events(connection, named: "subscriptions").first
            #expect(event?.strings("added") == ["u4"])
            #expect(event?.strings("removed") == ["u1"])
        }
        let listed = h.ok(alice, "getSubscriptions")["subscriptions"]?.arrayValue?.map { $0["userId"] }
        #expect(listed == ["u2", "u3", "u4"])
    }
}
