@testable import RollcallCore
import RollcallProtocol
import Testing

/// The core says which objects are replies (``SendKind``), so the transport never reads the
/// bytes to tell: a reply is every object with `id` and `ok`, and nothing else is.
@Suite struct SendKindTests {
    /// The sends of one request: each object decoded, with its kind.
    private func sends(_ harness: PresenceHarness, _ connection: ConnectionID, _ frame: String) throws -> [(ConnectionID, JSON, SendKind)] {
        try harness.broker.handle(.received(connection, Array(frame.utf8))).compactMap { action in
            guard case .send(let to, let bytes, let kind) = action else { return nil }
            return (to, try JSONParser.parse(bytes), kind)
        }
    }

    @Test func aJoinsReplyIsAReplyAndItsSnapshotAndEventsAreEvents() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        _ = try alice.ok("join", [("channel", "lobby")])
        let sent = try sends(harness, bob.connection, #"{"id":9,"op":"join","channel":"lobby"}"#)
        let replies = sent.filter { $0.2 == .reply }
        #expect(replies.count == 1)
        #expect(replies.first?.0 == bob.connection)
        #expect(replies.first?.1.int("id") == 9)
        let events = sent.filter { $0.2 == .event }
        #expect(events.contains { $0.0 == bob.connection && $0.1.string("type") == "snapshot" })
        #expect(events.contains { $0.0 == alice.connection && $0.1.string("type") == "join" })
        #expect(events.allSatisfy { $0.1["ok"] == nil && $0.1.string("event") != nil })
    }

    @Test func anErrorReplyIsAReply() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let sent = try sends(harness, alice.connection, #"{"id":"x","op":"join","channel":""}"#)
        #expect(sent.count == 1)
        #expect(sent.first?.2 == .reply)
        #expect(sent.first?.1["ok"] == false)
    }

    @Test func aMessageWhosePayloadHasAnIdIsAnEvent() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        _ = try alice.ok("join", [("channel", "lobby")])
        _ = try bob.ok("join", [("channel", "lobby")])
        _ = alice.events()
        let sent = try sends(harness, bob.connection, #"{"id":3,"op":"publish","channel":"lobby","message":{"id":1,"ok":true}}"#)
        #expect(sent.filter { $0.2 == .reply }.map(\.0) == [bob.connection])
        let toAlice = sent.filter { $0.0 == alice.connection }
        #expect(toAlice.count == 1)
        #expect(toAlice.first?.2 == .event)
        #expect(toAlice.first?.1.string("event") == "message")
    }
}
