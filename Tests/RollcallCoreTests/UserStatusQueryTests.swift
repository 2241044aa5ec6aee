import Testing
@testable import RollcallCore
import RollcallProtocol

@Suite("User status: getUserStatus and queryRate")
struct UserStatusQueryTests {
    @Test func neverSeenUserIsLoggedOutWithZeroTimes() {
        let h = StatusHarness()
        let alice = h.login("alice")
        let record = h.ok(alice, "getUserStatus", ["userIds": ids("ghost")]).statusesByUser["ghost"]
        #expect(record == .object([
            "userId": "ghost", "status": "loggedOut", "customStatus": nil, "platforms": [],
            "lastUpdateTime": 0, "lastOnlineStatusUpdateTime": 0, "lastCustomStatusUpdateTime": 0,
        ]))
    }

    @Test func invalidIdsFailAndTheRestProceed() {
        let h = StatusHarness()
        let alice = h.login("alice")
        _ = h.login("bob", platform: "android")
        let tooLong = String(repeating: "x", count: 129)
        let result = h.ok(alice, "getUserStatus", ["userIds": .array(["bob", "", .string(tooLong), "a\u{1}b", "bob", "alice"])])
        #expect(result.statusesByUser.keys.sorted() == ["alice", "bob"])
        #expect(result["statuses"]?.arrayValue?.count == 2)
        #expect(result.statusesByUser["bob"]?["status"] == "online")
        #expect(result.statusesByUser["bob"]?.strings("platforms") == ["android"])
        #expect(result.failures == ["": "INVALID_ARGUMENT", tooLong: "INVALID_ARGUMENT", "a\u{1}b": "INVALID_ARGUMENT"])
    }

    @Test func batchLimits() {
        let h = StatusHarness()
        let alice = h.login("alice")
        h.ok(alice, "getUserStatus", ["userIds": ids(prefix: "u", count: 500)])
        #expect(h.fail(alice, "getUserStatus", ["userIds": ids(prefix: "u", count: 501)])["code"] == "TOO_MANY_USERS")
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids(prefix: "u", count: 101)])["code"] == "TOO_MANY_USERS")
        #expect(h.fail(alice, "unsubscribeUserStatus", ["userIds": ids(prefix: "u", count: 101)])["code"] == "TOO_MANY_USERS")
        #expect(h.fail(alice, "getSubscriptions", ["userIds": ids(prefix: "u", count: 201)])["code"] == "TOO_MANY_USERS")
        #expect(h.fail(alice, "getUserStatus")["code"] == "INVALID_REQUEST")
        #expect(h.fail(alice, "getUserStatus", ["userIds": "bob"])["code"] == "INVALID_REQUEST")
    }

    @Test func queryRateIsSharedByTheThreeOpsAndOwnStatusIsFree() {
        let h = StatusHarness { $0.userStatus.queryRate = .init(calls: 3, perSeconds: 3) }
        let alice = h.login("alice")
        // Asking only about oneself never costs.
        for _ in 0..<10 { h.ok(alice, "getUserStatus", ["userIds": ids("alice")]) }
        h.ok(alice, "getUserStatus", ["userIds": ids("alice", "bob")])
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob")])
        h.ok(alice, "unsubscribeUserStatus", ["userIds": ids("bob")])
        let error = h.fail(alice, "getUserStatus", ["userIds": ids("bob")])
        #expect(error["code"] == "RATE_LIMITED")
        #expect(error.int("retryAfterMs") == 1000)
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids("bob")])["code"] == "RATE_LIMITED")
        #expect(h.fail(alice, "unsubscribeUserStatus")["code"] == "RATE_LIMITED")
        h.ok(alice, "getUserStatus", ["userIds": ids("alice")])
        // getSubscriptions is not counted.
        h.ok(alice, "getSubscriptions")
        // The budget is per user, not per session.
        let phone = h.login("alice", platform: "ios")
        #expect(h.fail(phone, "getUserStatus", ["userIds": ids("bob")])["code"] == "RATE_LIMITED")
        let bob = h.login("bob")
        h.ok(bob, "getUserStatus", ["userIds": ids("alice")])
        h.clock.advance(bySeconds: 1)
        h.ok(alice, "getUserStatus", ["userIds": ids("bob")])
    }

    @Test func refusedRequestsDoNotConsumeTheBudget() {
        let h = StatusHarness { $0.userStatus.queryRate = .init(calls: 1, perSeconds: 10) }
        let alice = h.login("alice")
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids(prefix: "u", count: 101)])["code"] == "TOO_MANY_USERS")
        #expect(h.fail(alice, "subscribeUserStatus", ["userIds": ids("bob"), "duration": 59])["code"] == "INVALID_ARGUMENT")
        h.ok(alice, "subscribeUserStatus", ["userIds": ids("bob")])
    }
}
