@testable import RollcallCore
import RollcallProtocol
import Testing

/// Webhook events from the core (PROTOCOL §11): `.notifyBackend` only when webhooks are on and
/// the kind is wanted; presence events byte for byte as clients get them; channel occupied and
/// vacated; user-status records; the order in which they happened.
@Suite struct BackendEventTests {
    private func makeHarness(events: [String] = ["presence", "channel", "userStatus"],
                             _ configure: (inout Configuration) -> Void = { _ in }) -> PresenceHarness {
        PresenceHarness {
            $0.webhooks.url = "http://127.0.0.1:9/hooks"
            $0.webhooks.secret = "s"
            $0.webhooks.events = events
            configure(&$0)
        }
    }

    private func decoded(_ events: [BackendEvent]) -> [JSON] {
        events.map { (try? JSONParser.parse($0.bytes)) ?? .null }
    }

    @Test func nothingIsEmittedWhileWebhooksAreOff() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "room")])
        try alice.ok("setCustomStatus", [("customStatus", "busy")])
        try alice.ok("leave", [("channel", "room")])
        #expect(harness.backendEvents.isEmpty)
    }

    @Test func presenceEventsAreTheBytesClientsReceive() throws {
        let harness = makeHarness(events: ["presence"])
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "room"), ("presence", true)])
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "room"), ("state", ["mood": "ok"])])
        try bob.ok("setState", [("channel", "room"), ("state", ["mood": "busy"])])
        try bob.ok("leave", [("channel", "room")])

        let clientEvents = (harness.rawEvents[alice.connection] ?? []).filter {
            (try? JSONParser.parse($0))?.string("type") != "snapshot"
        }
        let backend = harness.backendEvents
        #expect(backend.allSatisfy { $0.kind == .presence })
        // alice's own join reached no client (she is alone), the backend hears it too.
        #expect(decoded(backend).map { $0.string("type") ?? "?" } == ["join", "join", "stateChanged", "leave"])
        #expect(Array(backend.dropFirst().map(\.bytes)) == clientEvents)
        #expect(decoded(backend).map { $0.int("seq") ?? 0 } == [1, 2, 3, 4])
    }

    @Test func intervalEventsGoToTheBackendAndSnapshotsDoNot() throws {
        let harness = makeHarness(events: ["presence"]) {
            $0.presence.maxInstantEvents = 2
            $0.presence.hysteresis = 1
            $0.presence.intervalSeconds = 1
        }
        var clients: [HarnessClient] = []
        for user in ["u1", "u2", "u3", "u4"] {
            let client = try harness.login(user)
            try client.ok("join", [("channel", "room"), ("presence", true)])
            clients.append(client)
        }
        harness.advance(seconds: 1)
        let types = decoded(harness.backendEvents).map { $0.string("type") ?? "?" }
        #expect(types == ["join", "join", "interval"])
        let interval = try #require(harness.backendEvents.last)
        let received = harness.rawEvents[clients[0].connection] ?? []
        #expect(received.last == interval.bytes)
    }

    @Test func channelsAreOccupiedByTheFirstMemberAndVacatedByTheLast() throws {
        let harness = makeHarness(events: ["channel"])
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try alice.ok("join", [("channel", "room"), ("channelType", "stream")])
        try bob.ok("join", [("channel", "room"), ("channelType", "stream")])
        try alice.ok("leave", [("channel", "room"), ("channelType", "stream")])
        #expect(harness.backendEvents.count == 1)
        bob.close()
        let events = decoded(harness.backendEvents)
        #expect(events.map { $0.string("type") ?? "?" } == ["occupied", "vacated"])
        #expect(events[0] == [
            "event": "channel", "type": "occupied", "channel": "room", "channelType": "stream",
            "timestamp": .int(Int(harness.clock.now)), "seq": 1,
        ])
        // (1.2) The seq of the presence event that vacated it: bob's leave, the channel's fourth.
        #expect(events[1].int("seq") == 4)
    }

    @Test func occupiedComesBeforeTheJoinAndVacatedAfterTheLeave() throws {
        let harness = makeHarness(events: ["presence", "channel"])
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "room")])
        try alice.ok("leave", [("channel", "room")])
        let events = decoded(harness.backendEvents)
        #expect(events.map { "\($0.string("event") ?? "?"):\($0.string("type") ?? "?")" }
                == ["channel:occupied", "presence:join", "presence:leave", "channel:vacated"])
        // (1.2) Each channel event carries the seq of the presence event that occupied or vacated it.
        #expect(events.map { $0.int("seq") ?? 0 } == [1, 1, 2, 2])
    }

    @Test func aChannelOccupiedAgainCarriesTheSeqOfItsNewJoin() throws {
        let harness = makeHarness(events: ["channel"])
        let alice = try harness.login("alice")
        for _ in 0..<2 {
            try alice.ok("join", [("channel", "room")])
            try alice.ok("leave", [("channel", "room")])
        }
        #expect(decoded(harness.backendEvents).map { "\($0.string("type") ?? "?"):\($0.int("seq") ?? -1)" }
                == ["occupied:1", "vacated:2", "occupied:1", "vacated:2"])
    }

    @Test func aTimeoutVacatesAfterTheHoldAndShutdownVacatesEverything() throws {
        let harness = makeHarness(events: ["presence", "channel"]) { $0.presence.timeoutSeconds = 1 }
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "a")])
        alice.drop()
        #expect(harness.backendEvents.count == 2)
        harness.advance(seconds: 1)
        #expect(decoded(harness.backendEvents).suffix(2).map { $0.string("type") ?? "?" } == ["timeout", "vacated"])

        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "b")])
        harness.run(.shutdown)
        let last = try #require(decoded(harness.backendEvents).last)
        #expect(last.string("type") == "vacated")
        #expect(last.string("channel") == "b")
    }

    @Test func userStatusChangesCarryTheRecord() throws {
        let harness = makeHarness(events: ["userStatus"])
        let alice = try harness.login("alice", ["platform": "ios"])
        try alice.ok("setCustomStatus", [("customStatus", "busy")])
        harness.advance(seconds: 1.1)
        try alice.ok("setCustomStatus", [("customStatus", "busy")])  // unchanged: no event
        try alice.ok("logout")
        let events = decoded(harness.backendEvents)
        #expect(harness.backendEvents.allSatisfy { $0.kind == .userStatus })
        #expect(events.map { $0["status"]?.string("status") ?? "?" } == ["online", "online", "loggedOut"])
        #expect(events[1]["status"]?.string("customStatus") == "busy")
        #expect(events[0]["status"]?["platforms"] == ["ios"])
        #expect(events[0].objectValue?.members.map(\.key) == ["event", "version", "status"])
        // (1.2) The record's version steps by one with every change of it.
        #expect(events.map { $0.int("version") ?? 0 } == [1, 2, 3])
    }

    @Test func theVersionOfAUserRecordSurvivesARestartOfTheEngine() throws {
        let store = MemoryStatusStore()
        let first = PresenceHarness(store: store) {
            $0.webhooks.url = "http://127.0.0.1:9/hooks"
            $0.webhooks.secret = "s"
        }
        let alice = try first.login("alice")
        try alice.ok("setCustomStatus", [("customStatus", "busy")])
        let second = PresenceHarness(store: store) {
            $0.webhooks.url = "http://127.0.0.1:9/hooks"
            $0.webhooks.secret = "s"
        }
        _ = try second.login("alice")
        let versions = decoded(second.backendEvents).filter { $0.string("event") == "userStatus" }.map { $0.int("version") ?? 0 }
        #expect(versions == [3])
    }

    @Test func theEventsFilterPicksKinds() throws {
        let harness = makeHarness(events: ["channel", "userStatus"])
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "room")])
        #expect(harness.backendEvents.map(\.kind) == [.userStatus, .channel])
        let none = makeHarness(events: [])
        let bob = try none.login("bob")
        try bob.ok("join", [("channel", "room")])
        #expect(none.backendEvents.isEmpty)
    }
}
