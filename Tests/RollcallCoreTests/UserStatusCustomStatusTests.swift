import Testing
@testable import RollcallCore
import RollcallProtocol

@Suite("User status: custom status")
struct UserStatusCustomStatusTests {
    @Test func setReturnsRecordAndStampsTimes() {
        let h = StatusHarness()
        let alice = h.login("alice", platform: "ios")
        let loginTime = h.clock.now
        h.clock.advance(bySeconds: 2)
        let result = h.ok(alice, "setCustomStatus", ["customStatus": "Busy"])
        let record = result["status"]!
        #expect(record["userId"] == "alice")
        #expect(record["status"] == "online")
        #expect(record["customStatus"] == "Busy")
        #expect(record.strings("platforms") == ["ios"])
        #expect(record.int("lastCustomStatusUpdateTime") == Int(h.clock.now))
        #expect(record.int("lastUpdateTime") == Int(h.clock.now))
        #expect(record.int("lastOnlineStatusUpdateTime") == Int(loginTime))
    }

    @Test func nullAndEmptyClear() {
        let h = StatusHarness()
        let alice = h.login("alice")
        h.ok(alice, "setCustomStatus", ["customStatus": "Busy"])
        h.clock.advance(bySeconds: 1)
        #expect(h.ok(alice, "setCustomStatus", ["customStatus": nil])["status"]?["customStatus"] == .null)
        h.clock.advance(bySeconds: 1)
        h.ok(alice, "setCustomStatus", ["customStatus": "Away"])
        h.clock.advance(bySeconds: 1)
        #expect(h.ok(alice, "setCustomStatus", ["customStatus": ""])["status"]?["customStatus"] == .null)
    }

    @Test func missingArgumentIsInvalidRequest() {
        let h = StatusHarness()
        let alice = h.login("alice")
        #expect(h.fail(alice, "setCustomStatus")["code"] == "INVALID_REQUEST")
        #expect(h.fail(alice, "setCustomStatus", ["customStatus": 5])["code"] == "INVALID_REQUEST")
    }

    @Test func sameValueAgainChangesNothingAndSendsNothing() {
        let h = StatusHarness()
        let alice = h.login("alice")
        let phone = h.login("alice", platform: "ios")
        let bob = h.login("bob")
        h.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        let first = h.ok(alice, "setCustomStatus", ["customStatus": "Busy"])["status"]!
        h.clearEvents()
        h.clock.advance(bySeconds: 5)
        let again = h.ok(alice, "setCustomStatus", ["customStatus": "Busy"])["status"]!
        #expect(again == first)
        #expect(h.events(bob).isEmpty)
        #expect(h.events(phone).isEmpty)
    }

    @Test func tooLongIsRefusedAtSetAndAtLogin() {
        let h = StatusHarness { $0.userStatus.customStatusMaxBytes = 8 }
        let alice = h.login("alice")
        #expect(h.ok(alice, "setCustomStatus", ["customStatus": "12345678"])["status"]?["customStatus"] == "12345678")
        h.clock.advance(bySeconds: 1)
        // 3 × 3-byte characters = 9 bytes.
        let error = h.fail(alice, "setCustomStatus", ["customStatus": "日本語"])
        #expect(error["code"] == "CUSTOM_STATUS_TOO_LONG")
        let connection = h.open()
        let reply = h.send(connection, "login", ["userId": "bob", "customStatus": "123456789"])
        #expect(reply["error"]?["code"] == "CUSTOM_STATUS_TOO_LONG")
    }

    @Test func rateLimitedPerUserWithRetryAfter() {
        let h = StatusHarness { $0.userStatus.customStatusPerSecond = 1 }
        let alice = h.login("alice")
        let tablet = h.login("alice", platform: "ios")
        h.ok(alice, "setCustomStatus", ["customStatus": "one"])
        h.clock.advance(byMilliseconds: 400)
        // Another session of the same user shares the budget.
        let error = h.fail(tablet, "setCustomStatus", ["customStatus": "two"])
        #expect(error["code"] == "RATE_LIMITED")
        #expect(error.int("retryAfterMs") == 600)
        h.clock.advance(byMilliseconds: 600)
        h.ok(tablet, "setCustomStatus", ["customStatus": "two"])
        // Another user is not affected.
        let bob = h.login("bob")
        h.ok(bob, "setCustomStatus", ["customStatus": "x"])
    }

    @Test func loginCustomStatusDoesNotCountAgainstRateAndEmptyLeavesItUnchanged() {
        let h = StatusHarness()
        let alice = h.login("alice", customStatus: "from login")
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.customStatus == "from login")
        h.ok(alice, "setCustomStatus", ["customStatus": "right after"])
        let phone = h.login("alice", platform: "ios", customStatus: "")
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.customStatus == "right after")
        _ = phone
    }

    @Test func expiresAfterTtlAndSubscribersAndAllSessionsAreTold() {
        let h = StatusHarness { $0.userStatus.customStatusTtlSeconds = 60 }
        let alice = h.login("alice")
        let bob = h.login("bob")
        h.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        h.ok(alice, "setCustomStatus", ["customStatus": "Lunch"])
        h.clearEvents()
        #expect(h.broker.nextDeadline == h.clock.monotonic + 60_000)
        h.advance(seconds: 59.999)
        #expect(h.events(bob).isEmpty)
        h.advance(seconds: 0.001)
        let toBob = h.events(bob, named: "userStatus")
        #expect(toBob.count == 1)
        #expect(toBob.first?.statusesByUser["alice"]?["customStatus"] == .null)
        #expect(toBob.first?.statusesByUser["alice"]?.int("lastCustomStatusUpdateTime") == Int(h.clock.now))
        // The setter's own session hears of it too (nobody caused it).
        #expect(h.events(alice, named: "userStatus").count == 1)
    }

    @Test func newValueRestartsTtl() {
        let h = StatusHarness { $0.userStatus.customStatusTtlSeconds = 60 }
        let alice = h.login("alice")
        h.ok(alice, "setCustomStatus", ["customStatus": "one"])
        h.advance(seconds: 30)
        h.ok(alice, "setCustomStatus", ["customStatus": "two"])
        h.advance(seconds: 45)
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.customStatus == "two")
        h.advance(seconds: 15)
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.customStatus == nil)
    }

    @Test func clearedOnOfflineOnlyWhenConfigured() {
        let keep = StatusHarness()
        let a = keep.login("alice", customStatus: "Busy")
        keep.close(a)
        #expect(keep.broker.userStatus.record(of: Name("alice")!).stored.customStatus == "Busy")

        let clear = StatusHarness { $0.userStatus.clearCustomStatusOnOffline = true }
        let b = clear.login("alice", customStatus: "Busy")
        let bob = clear.login("bob")
        clear.ok(bob, "subscribeUserStatus", ["userIds": ids("alice")])
        clear.clock.advance(bySeconds: 3)
        clear.close(b)
        let event = clear.events(bob, named: "userStatus").last
        #expect(event?.statusesByUser["alice"]?["status"] == "offline")
        #expect(event?.statusesByUser["alice"]?["customStatus"] == .null)
        #expect(event?.statusesByUser["alice"]?.int("lastCustomStatusUpdateTime") == Int(clear.clock.now))
    }

    @Test func notClearedWhileAnotherSessionRemains() {
        let h = StatusHarness { $0.userStatus.clearCustomStatusOnOffline = true }
        let a = h.login("alice", customStatus: "Busy")
        _ = h.login("alice", platform: "ios")
        h.close(a)
        #expect(h.broker.userStatus.record(of: Name("alice")!).stored.customStatus == "Busy")
    }
}
