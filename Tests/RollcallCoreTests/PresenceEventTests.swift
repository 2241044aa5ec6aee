@testable import RollcallCore
import RollcallProtocol
import Testing

/// Announce-mode events: who gets what, per-user membership across sessions, flags, seq.
@Suite struct PresenceEventTests {
    @Test func joinEventHasEveryFieldAndTheJoinerGetsASnapshot() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try alice.ok("join", [("channel", "lobby")])
        _ = alice.events()
        #expect(try bob.ok("join", [("channel", "lobby"), ("state", ["s": "1"])]) == ["occupancy": 2, "mode": "announce"])
        let now = JSON.int(Int(harness.clock.now))
        #expect(alice.events() == [[
            "event": "presence", "type": "join", "channel": "lobby", "channelType": "message", "publisher": "bob",
            "state": ["s": "1"], "occupancy": 2, "mode": "announce", "seq": 2, "timestamp": now,
        ]])
        #expect(bob.events() == [[
            "event": "presence", "type": "snapshot", "channel": "lobby", "channelType": "message",
            "snapshot": [["userId": "alice", "state": [:]], ["userId": "bob", "state": ["s": "1"]]],
            "occupancy": 2, "mode": "announce", "seq": 2, "timestamp": now,
        ]])
    }

    @Test func aUserWithSeveralSessionsCountsOnceAndLeavesWithTheLast() throws {
        let harness = PresenceHarness()
        let bob = try harness.login("bob")
        let alice = try harness.login("alice")
        let aliceTab = try harness.login("alice")
        try bob.ok("join", [("channel", "lobby")])
        try alice.ok("join", [("channel", "lobby"), ("state", ["k": "v"])])
        _ = bob.events()
        _ = alice.events()
        #expect(try aliceTab.ok("join", [("channel", "lobby")]) == ["occupancy": 2, "mode": "announce"])
        #expect(bob.events().isEmpty)
        // The tab's snapshot shows alice's shared state.
        #expect(aliceTab.events().first?["snapshot"]?.arrayValue?.first == ["userId": "alice", "state": ["k": "v"]])
        // A state change by one tab goes to others, never to alice's own sessions.
        try aliceTab.ok("setState", [("channel", "lobby"), ("state", ["k": "w"])])
        #expect(bob.presenceEvents().map { $0.string("type") } == ["stateChanged"])
        #expect(alice.events().isEmpty)
        try alice.ok("leave", [("channel", "lobby")])
        #expect(bob.events().isEmpty)
        #expect(try bob.ok("getState", [("channel", "lobby"), ("userId", "alice")])["state"] == ["k": "w"])
        aliceTab.close()
        let leave = bob.presenceEvents()
        #expect(leave.map { $0.string("type") } == ["leave"])
        #expect(leave.first?.int("occupancy") == 1)
        // Joining again starts from an empty state.
        let back = try harness.login("alice")
        try back.ok("join", [("channel", "lobby")])
        #expect(bob.presenceEvents().first?["state"] == [:])
    }

    @Test func flagsDecideWhatASessionGetsAndRejoiningUpdatesThem() throws {
        let harness = PresenceHarness()
        let quiet = try harness.login("quiet")
        let deaf = try harness.login("deaf")
        let bob = try harness.login("bob")
        try quiet.ok("join", [("channel", "lobby"), ("presence", false)])
        try deaf.ok("join", [("channel", "lobby"), ("messages", false)])
        #expect(quiet.events().isEmpty)  // no snapshot either
        _ = deaf.events()
        try bob.ok("join", [("channel", "lobby")])
        _ = bob.events()
        try bob.ok("publish", [("channel", "lobby"), ("message", "m")])
        #expect(quiet.events().map { $0.string("event") } == ["message"])
        #expect(deaf.events().map { $0.string("type") } == ["join"])
        // Rejoin flips the flags: a fresh snapshot, then presence but no messages.
        #expect(try quiet.ok("join", [("channel", "lobby"), ("messages", false)]) == ["occupancy": 3, "mode": "announce"])
        #expect(quiet.events().map { $0.string("type") } == ["snapshot"])
        try bob.ok("publish", [("channel", "lobby"), ("message", "m")])
        try bob.ok("setState", [("channel", "lobby"), ("state", ["a": "b"])])
        #expect(quiet.events().map { $0.string("type") } == ["stateChanged"])
        #expect(bob.events().isEmpty)  // its own stateChanged is not sent to it
    }

    @Test func seqGrowsByOnePerEventAndEncodingsAreShared() throws {
        let harness = PresenceHarness()
        let watchers = try (0..<3).map { try harness.login("w\($0)") }
        for watcher in watchers { try watcher.ok("join", [("channel", "c")]) }
        for watcher in watchers { _ = watcher.events() }
        let actor = try harness.login("actor")
        try actor.ok("join", [("channel", "c")])
        try actor.ok("setState", [("channel", "c"), ("state", ["x": "1"])])
        try actor.ok("setState", [("channel", "c"), ("state", ["x": "1"])])
        try actor.ok("removeState", [("channel", "c"), ("keys", ["x"])])
        try actor.ok("leave", [("channel", "c")])
        for watcher in watchers {
            let events = watcher.events()
            #expect(events.map { $0.string("type") } == ["join", "stateChanged", "stateChanged", "leave"])
            #expect(events.map { $0.int("seq") } == [4, 5, 6, 7])
        }
        // One encoding per event: every recipient's action holds the same storage.
        let arrays = watchers.compactMap { harness.rawEvents[$0.connection]?.last }
        let addresses = arrays.map { $0.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(Set(addresses).count == 1)
    }

    @Test func emptyChannelsAreDeleted() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        for i in 0..<20 {
            try alice.ok("join", [("channel", .string("c\(i)"))])
            try alice.ok("leave", [("channel", .string("c\(i)"))])
        }
        try alice.ok("getOnlineUsers", [("channel", "c1")])
        try alice.ok("publish", [("channel", "c2"), ("message", 1)])
        #expect(harness.broker.presence.channelCount == 0)
        #expect(harness.broker.presence.nextDeadline == nil)
    }
}
