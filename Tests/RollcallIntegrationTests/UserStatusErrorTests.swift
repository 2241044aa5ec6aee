import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §6–7 through the real binary: batch limits, refusals, rate limits and caps.
@Suite("User status errors and limits")
struct UserStatusErrorTests {
    static func ids(_ count: Int, prefix: String = "u") -> JSON { .array((0..<count).map { .string("\(prefix)\($0)") }) }

    @Test("batches over their limit: TOO_MANY_USERS; at the limit they pass", arguments: Topology.singleAndCluster)
    func tooManyUsers(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice", platform: "web")
        let limits: [(op: String, limit: Int)] = [
            ("getUserStatus", 500), ("subscribeUserStatus", 100), ("unsubscribeUserStatus", 100), ("getSubscriptions", 200),
        ]
        for (op, limit) in limits {
            let over = try alice.request(op, ["userIds": Self.ids(limit + 1)])
            #expect(over.errorCode == .tooManyUsers, "\(op) with \(limit + 1) ids: \(over)")
            let at = try alice.request(op, ["userIds": Self.ids(limit)])
            #expect(at.ok, "\(op) with \(limit) ids: \(at)")
        }
    }

    @Test("subscribing to oneself fails CANNOT_SUBSCRIBE_SELF; the rest proceed", arguments: Topology.singleAndCluster)
    func cannotSubscribeSelf(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice", platform: "web")
        let reply = try alice.subscribe(["alice", "bob"])
        #expect(reply.ok, "\(reply)")
        #expect(reply.failures == ["alice": "CANNOT_SUBSCRIBE_SELF"])
        #expect(reply.statuses.map { $0.userIdText } == ["bob"])
        let bad = try alice.subscribe(["bob"], duration: 59)
        #expect(bad.errorCode == .invalidArgument, "duration below 60 s: \(bad)")
    }

    @Test("custom status over customStatusMaxBytes (UTF-8 bytes): CUSTOM_STATUS_TOO_LONG, nothing changes", arguments: Topology.singleAndCluster)
    func customStatusTooLong(topology: Topology) throws {
        let broker = try topology.start(config: UserStatusTests.relaxedRates)
        let alice = try broker.session("alice", platform: "web")
        let fits = String(repeating: "é", count: 32) // 64 bytes
        #expect(try alice.setCustomStatus(fits).ok)
        let tooLong = try alice.setCustomStatus(String(repeating: "é", count: 32) + "x")
        #expect(tooLong.errorCode == .customStatusTooLong, "\(tooLong)")
        #expect(try alice.userStatus(of: "alice").customStatusText == fits)
        let atLogin = try broker.connect()
        #expect(try atLogin.login(userId: "bob", customStatus: String(repeating: "b", count: 65)).errorCode == .customStatusTooLong)
    }

    @Test("customStatusPerSecond: the second set within the second is RATE_LIMITED with retryAfterMs", arguments: Topology.singleAndCluster)
    func customStatusRate(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.connect()
        #expect(try alice.login(userId: "alice", platform: "web", customStatus: "at login").ok)
        let first = try alice.setCustomStatus("one") // the login's customStatus did not count
        #expect(first.ok, "\(first)")
        let second = try alice.setCustomStatus("two")
        #expect(second.errorCode == .rateLimited, "\(second)")
        let retry = try #require(second.retryAfterMs)
        #expect(retry > 0 && retry <= 1000)
        #expect(try alice.userStatus(of: "alice").customStatusText == "one")
        // The rate is per user: another session of alice shares it. In a cluster rates may be
        // counted per node (PROTOCOL §9), so there the other session is on alice's node (n1).
        let other = try (broker as? ClusterProcess)?.session("alice", node: 0) ?? broker.session("alice", platform: "ios")
        #expect(try other.setCustomStatus("three").errorCode == .rateLimited)
        #expect(try eventually(timeout: 5) { try alice.setCustomStatus("two").ok }, "allowed again after retryAfterMs")
    }

    @Test("queryRate: getUserStatus of others, subscribe and unsubscribe share one bucket; own status is free", arguments: Topology.singleAndCluster)
    func queryRate(topology: Topology) throws {
        let broker = try topology.start(config: ["userStatus": ["queryRate": ["calls": 3, "perSeconds": 60]]])
        let alice = try broker.session("alice", platform: "web")
        #expect(try alice.request("getUserStatus", ["userIds": ["bob"]]).ok)
        #expect(try alice.subscribe(["bob"]).ok)
        #expect(try alice.request("unsubscribeUserStatus", ["userIds": ["bob"]]).ok)
        let limited = try alice.request("getUserStatus", ["userIds": ["bob"]])
        #expect(limited.errorCode == .rateLimited, "\(limited)")
        let retry = try #require(limited.retryAfterMs)
        #expect(retry > 0 && retry <= 20_000, "one call per 20 s: \(retry)")
        #expect(try alice.subscribe(["carol"]).errorCode == .rateLimited)
        #expect(try alice.request("getUserStatus", ["userIds": ["alice"]]).ok, "own status does not count")
        #expect(try alice.request("getSubscriptions").ok, "getSubscriptions does not count")
        let otherUser = try broker.session("bob", platform: "ios")
        #expect(try otherUser.request("getUserStatus", ["userIds": ["alice"]]).ok, "the bucket is per user")
    }

    @Test("maxSubscribersPerUser: a full target fails TARGET_SUBSCRIBER_LIMIT; renewals pass", arguments: Topology.singleAndCluster)
    func targetSubscriberLimit(topology: Topology) throws {
        let broker = try topology.start(config: ["userStatus": ["maxSubscribersPerUser": 2]])
        let first = try broker.session("u1", platform: "web")
        let second = try broker.session("u2", platform: "web")
        let third = try broker.session("u3", platform: "web")
        #expect(try first.subscribe(["star"]).failures.isEmpty)
        #expect(try second.subscribe(["star"]).failures.isEmpty)
        let refused = try third.subscribe(["star", "moon"])
        #expect(refused.ok, "\(refused)")
        #expect(refused.failures == ["star": "TARGET_SUBSCRIBER_LIMIT"])
        #expect(refused.statuses.map { $0.userIdText } == ["moon"])
        #expect(try first.subscribe(["star"]).failures.isEmpty, "a renewal is not refused")
        #expect(try first.request("unsubscribeUserStatus", ["userIds": ["star"]]).ok)
        #expect(try third.subscribe(["star"]).failures.isEmpty, "room again after an unsubscribe")
    }

    @Test("maxSubscriptionsPerUser: the earliest-made is dropped; every session of the user gets both lists", arguments: Topology.singleAndCluster)
    func subscriptionCapEvicts(topology: Topology) throws {
        let broker = try topology.start(config: ["userStatus": ["maxSubscriptionsPerUser": 2]])
        let alice = try broker.session("alice", platform: "web")
        let phone = try broker.session("alice", platform: "ios")
        #expect(try alice.subscribe(["a"]).ok)
        #expect(try alice.subscribe(["b"]).ok)
        #expect(try alice.subscribe(["a"]).ok, "renewing a keeps its age")
        // A barrier, not a bare drain: the events alice's requests caused for the phone may
        // still be on their way (a busy session's events can wait up to 4 ms to share a frame).
        _ = try phone.settledEvents(named: "subscriptions")
        let reply = try alice.subscribe(["c"])
        #expect(reply.ok, "\(reply)")
        // On a cluster the phone may be on another node: the events of alice's earlier
        // requests reach it through her inbox, and the ping barrier above (on the phone's own
        // node) does not wait for them. They come in order, so the one that adds c is awaited.
        for session in [alice, phone] {
            var event: (added: [String], removed: [String]) = ([], [])
            repeat { event = try session.waitForSubscriptionsEvent() } while event.added != ["c"] && event.removed.isEmpty
            #expect(event.added == ["c"])
            #expect(event.removed == ["a"], "a was made first even though renewed later")
        }
        let listed = try alice.request("getSubscriptions")
        #expect((listed["subscriptions"]?.arrayValue ?? []).map { $0.userIdText } == ["b", "c"])
    }
}
