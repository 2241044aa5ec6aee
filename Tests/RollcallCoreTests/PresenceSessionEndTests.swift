@testable import RollcallCore
import RollcallProtocol
import Testing

/// PROTOCOL §5 for presence: close, logout, abrupt drop and hold, timeout, resume, shutdown.
@Suite struct PresenceSessionEndTests {
    private func makeHarness() -> PresenceHarness {
        PresenceHarness { $0.presence.timeoutSeconds = 2 }
    }

    @Test func aCloseFrameOrLogoutLeavesEveryChannel() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "a")])
        try bob.ok("join", [("channel", "b"), ("channelType", "stream")])
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "a")])
        try alice.ok("join", [("channel", "b"), ("channelType", "stream")])
        _ = bob.events()
        alice.close()
        let events = bob.presenceEvents()
        #expect(Set(events.compactMap { $0.string("type") }) == ["leave"])
        #expect(Set(events.compactMap { $0.string("channelType") }) == ["message", "stream"])

        let carol = try harness.login("carol")
        try carol.ok("join", [("channel", "a")])
        _ = bob.events()
        try carol.ok("logout")
        #expect(harness.closes[carol.connection] == .logout)
        #expect(bob.presenceEvents().map { $0.string("type") } == ["leave"])
        #expect(harness.broker.presence.userChannels.channels(of: Name(unchecked: "carol")).isEmpty)
    }

    @Test func aDroppedSessionIsHeldThenTimesOut() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "a")])
        let alice = try harness.login("alice", ["presenceTimeout": 6])
        try alice.ok("join", [("channel", "a"), ("state", ["k": "v"])])
        _ = bob.events()
        alice.drop()
        #expect(bob.events().isEmpty)
        #expect(try bob.ok("getOnlineUsers", [("channel", "a")])["totalOccupancy"] == 2)
        try bob.ok("publish", [("channel", "a"), ("message", "lost")])  // dropped for the held session
        harness.advance(seconds: 5.9)
        #expect(bob.events().isEmpty)
        harness.advance(seconds: 0.1)
        let events = bob.events()
        #expect(events.count == 1)
        #expect(events.first?.string("type") == "timeout")
        #expect(events.first?.string("publisher") == "alice")
        #expect(events.first?["state"] == nil)
        #expect(events.first?.int("occupancy") == 1)
        // The token no longer resumes.
        let late = try harness.login("alice", ["resumeToken": .string(alice.resumeToken)])
        #expect(late.lastLoginResult?["resumed"] == false)
    }

    @Test func aHeldSessionOfAUserWithAnotherSessionTimesOutSilently() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "a")])
        let alice = try harness.login("alice")
        let tab = try harness.login("alice")
        try alice.ok("join", [("channel", "a")])
        try tab.ok("join", [("channel", "a")])
        _ = bob.events()
        alice.drop()
        harness.advance(seconds: 3)
        #expect(bob.events().isEmpty)
        tab.drop()
        harness.advance(seconds: 3)
        #expect(bob.presenceEvents().map { $0.string("type") } == ["timeout"])
    }

    @Test func resumingSendsFreshSnapshotsAndNoEvents() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "a")])
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "a"), ("state", ["k": "v"])])
        try alice.ok("join", [("channel", "s"), ("channelType", "stream")])
        try alice.ok("join", [("channel", "quiet"), ("presence", false)])
        _ = bob.events()
        alice.drop()
        try bob.ok("setState", [("channel", "a"), ("state", ["while": "held"])])
        harness.advance(seconds: 1)
        let result = try alice.resume()
        #expect(result["resumed"] == true)
        #expect(result["channels"] == [
            ["channel": "a", "channelType": "message"], ["channel": "quiet", "channelType": "message"],
            ["channel": "s", "channelType": "stream"],
        ])
        #expect(bob.events().isEmpty)
        let snapshots = alice.events()
        #expect(snapshots.map { $0.string("type") } == ["snapshot", "snapshot"])
        #expect(snapshots.first?["snapshot"] == [
            ["userId": "alice", "state": ["k": "v"]], ["userId": "bob", "state": ["while": "held"]],
        ])
        #expect(snapshots.last?.string("channelType") == "stream")
        // Still a member afterwards; the hold timer is gone.
        harness.advance(seconds: 5)
        #expect(bob.events().isEmpty)
        try bob.ok("publish", [("channel", "a"), ("message", 1)])
        #expect(alice.events().map { $0.string("event") } == ["message"])
        // A used token does not resume again.
        alice.drop()
        let reuse = try harness.login("alice", ["resumeToken": .string("not-a-token")])
        #expect(reuse.lastLoginResult?["resumed"] == false)
    }

    @Test func pendingStatesDieWithTheSessionButSurviveAHold() throws {
        let harness = makeHarness()
        let alice = try harness.login("alice")
        try alice.ok("setState", [("channel", "a"), ("state", ["k": "v"])])
        alice.drop()
        try alice.resume()
        try alice.ok("join", [("channel", "a")])
        #expect(try alice.ok("getState", [("channel", "a"), ("userId", "alice")])["state"] == ["k": "v"])
        try alice.ok("setState", [("channel", "b"), ("state", ["k": "v"])])
        alice.close()
        let again = try harness.login("alice")
        try again.ok("join", [("channel", "b")])
        #expect(try again.ok("getState", [("channel", "b"), ("userId", "alice")])["state"] == [:])
    }

    @Test func theSessionLimitClosesTheOldestWithLeaves() throws {
        let harness = PresenceHarness { $0.limits.maxSessionsPerUser = 1 }
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "a")])
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "a")])
        _ = bob.events()
        _ = try harness.login("alice")
        #expect(harness.closes[alice.connection] == .sessionLimit)
        #expect(bob.presenceEvents().map { $0.string("type") } == ["leave"])
    }

    @Test func shutdownSendsNoPresenceEvents() throws {
        let harness = makeHarness()
        let clients = try (0..<3).map { try harness.login("u\($0)") }
        for client in clients { try client.ok("join", [("channel", "a")]) }
        for client in clients { _ = client.events() }
        harness.run(.shutdown)
        for client in clients { #expect(client.presenceEvents().isEmpty) }
        #expect(harness.broker.presence.channelCount == 0)
    }
}
