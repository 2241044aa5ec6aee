import RollcallProtocol
import Testing
@testable import RollcallCore

/// PROTOCOL §4 (1.1): per-key TTL on `setState` and `join`'s state.
@Suite("state TTL")
struct StateTTLTests {
    /// alice and bob in `lobby`; bob's events drained.
    private func pair(_ configure: @escaping (inout Configuration) -> Void = { _ in }) throws
        -> (PresenceHarness, HarnessClient, HarnessClient) {
        let harness = PresenceHarness(configure)
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        _ = try alice.ok("join", [("channel", "lobby")])
        _ = try bob.ok("join", [("channel", "lobby")])
        _ = bob.events()
        return (harness, alice, bob)
    }

    private func stateChanges(_ client: HarnessClient) -> [JSON] {
        client.presenceEvents().filter { $0.string("type") == "stateChanged" }
    }

    @Test("keys set together expire together, in one stateChanged, at the deadline and not before")
    func expiresAtTheDeadline() throws {
        let (harness, alice, bob) = try pair()
        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["mood": "ok"])])
        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["typing": "1", "draft": "yes"]), ("ttlSeconds", 3)])
        #expect(stateChanges(bob).count == 2)
        harness.advance(seconds: 2.9)
        #expect(stateChanges(bob).isEmpty)
        harness.advance(seconds: 0.1)
        let expired = stateChanges(bob)
        #expect(expired.count == 1)
        #expect(expired.first?["state"] == ["mood": "ok"])
        #expect(try bob.ok("getState", [("channel", "lobby"), ("userId", "alice")])["state"] == ["mood": "ok"])
    }

    @Test("setting a key again resets its deadline; without ttlSeconds it clears it")
    func resetAndClear() throws {
        let (harness, alice, bob) = try pair()
        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", 3)])
        harness.advance(seconds: 2)
        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", 3)])
        _ = bob.events()
        harness.advance(seconds: 2.9)
        #expect(stateChanges(bob).isEmpty, "reset: not at the first deadline")
        harness.advance(seconds: 0.1)
        #expect(stateChanges(bob).count == 1)

        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", 3)])
        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["typing": "1"])])
        _ = bob.events()
        harness.advance(seconds: 10)
        #expect(stateChanges(bob).isEmpty, "cleared: never expires")
    }

    @Test("removeState and leaving clear the deadlines")
    func removeAndLeaveClear() throws {
        let (harness, alice, bob) = try pair()
        _ = try alice.ok("setState", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", 1)])
        _ = try alice.ok("removeState", [("channel", "lobby"), ("keys", ["typing"])])
        _ = try alice.ok("setState", [("channel", "other"), ("state", ["typing": "1"]), ("ttlSeconds", 1)])
        _ = try alice.ok("join", [("channel", "other")])
        _ = try alice.ok("leave", [("channel", "other")])
        _ = try alice.ok("join", [("channel", "other")])
        _ = try alice.ok("setState", [("channel", "other"), ("state", ["typing": "1"])])
        _ = bob.events()
        harness.advance(seconds: 5)
        #expect(stateChanges(bob).isEmpty)
        #expect(try alice.ok("getState", [("channel", "other"), ("userId", "alice")])["state"] == ["typing": "1"])
    }

    @Test("a pending state's TTL starts at the join; join's own state takes ttlSeconds too")
    func pendingAndJoin() throws {
        let (harness, alice, bob) = try pair()
        _ = try bob.ok("join", [("channel", "room")])
        _ = try alice.ok("setState", [("channel", "room"), ("state", ["typing": "1"]), ("ttlSeconds", 2)])
        harness.advance(seconds: 5)
        _ = try alice.ok("join", [("channel", "room"), ("state", ["speaking": "1"]), ("ttlSeconds", 1)])
        _ = bob.events()
        harness.advance(seconds: 1)
        let first = stateChanges(bob)
        #expect(first.count == 1)
        #expect(first.first?["state"] == ["typing": "1"])
        harness.advance(seconds: 1)
        #expect(stateChanges(bob).first?["state"] == [:])
    }

    @Test("in interval mode an expiry is part of the net change")
    func intervalMode() throws {
        let harness = PresenceHarness {
            $0.presence.maxInstantEvents = 1
            $0.presence.hysteresis = 0
            $0.presence.intervalSeconds = 1
        }
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        _ = try alice.ok("join", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", .number(JSONNumber(0.5)))])
        _ = try bob.ok("join", [("channel", "lobby")])
        _ = bob.events()
        harness.advance(seconds: 1)
        let intervals = bob.presenceEvents().filter { $0.string("type") == "interval" }
        #expect(intervals.count == 1)
        #expect(intervals.first?["interval"]?["stateChanged"] == [["userId": "alice", "state": [:]]])
    }

    @Test("ttlSeconds out of range is INVALID_ARGUMENT; not a number is INVALID_REQUEST",
          arguments: [(JSON.number(JSONNumber(0.05)), "INVALID_ARGUMENT"), (.int(86_401), "INVALID_ARGUMENT"), (.string("3"), "INVALID_REQUEST")])
    func invalidTTL(value: JSON, code: String) throws {
        let (_, alice, _) = try pair()
        #expect(alice.errorCode("setState", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", value)]) == code)
        #expect(alice.errorCode("join", [("channel", "lobby"), ("state", ["typing": "1"]), ("ttlSeconds", value)]) == code)
    }
}
