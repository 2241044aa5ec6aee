import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Chaos finding 2 (issue 29): a `publish` answered `UNAVAILABLE` whose script had run (its
/// answer lost with the link) was sent again by the client and delivered twice. A message has
/// no `seq`, so nobody downstream can drop the copy: the retry must complete the first publish,
/// not repeat it (docs/protocol.md 45).
@Suite("Cluster: a publish answered UNAVAILABLE is completed by its retry, never delivered twice")
struct ClusterUnavailablePublishTests {
    private func messages(_ client: ClusterBed.Client) -> [JSON] {
        client.events.filter { $0.string("event") == "message" }.compactMap { $0["message"] }
    }

    @Test("a publish that ran but whose answer was lost, then a publish that never ran: each retry delivers the message once",
          arguments: [true, false])
    func theRetryDeliversOnce(answerLost: Bool) throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "pubretry\(answerLost ? "l" : "d"):")
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": .string("room")])["ok"]?.boolValue == true)

        bed.failFirstCall(running: "presence.publish", on: 0, answerLost: answerLost)
        let first = try bed.request(alice, "publish", ["channel": .string("room"), "message": .string("hello")])
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        let retry = try bed.request(alice, "publish", ["channel": .string("room"), "message": .string("hello")])
        #expect(retry["ok"]?.boolValue == true, "\(retry.compactString)")
        #expect(retry["result"]?["recipients"]?.numberValue?.intValue == 1, "\(retry.compactString)")

        // A later, different publish goes out as usual; then the same text again is a new message.
        #expect(try bed.request(alice, "publish", ["channel": .string("room"), "message": .string("again")])["ok"]?.boolValue == true)
        #expect(try bed.request(alice, "publish", ["channel": .string("room"), "message": .string("hello")])["ok"]?.boolValue == true)
        try bed.pump(until: { messages(bob).count >= 3 }, what: "bob's messages")
        #expect(try bed.request(bob, "ping")["ok"]?.boolValue == true)
        #expect(messages(bob) == ["hello", "again", "hello"], "each message once, in order: \(messages(bob))")
    }

    @Test("a held session that resumes before its node hears a message Redis kept for it gets the message once, with its resume")
    func aMessageKeptForAHeldSessionIsNotDeliveredAgainAfterItsResume() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "keptmsg:")
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": .string("room")])["ok"]?.boolValue == true)

        // Alice's connection drops: her session is held, and Redis keeps messages for her.
        bed.disconnect(alice, abnormally: true)
        try bed.pump(until: { (try? bed.redis.command(["SISMEMBER", "keptmsg:{0}c:m:4:room:hm", alice.sessionId])) == ":1" },
                     what: "alice's hold recorded in Redis")
        // Node 1's subscriber link lags: it hears bob's message only after alice resumed there.
        bed.delaysStoreMessage = { node, payload in node == 0 && payload.first == UInt8(ascii: "M") }
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("while away")])["ok"]?.boolValue == true)
        let back = try bed.login("alice", on: 0, ["resumeToken": .string(alice.resumeToken)])
        #expect(back.resumed, "alice resumed")
        bed.releaseHeldMessages(node: 0)
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true)
        #expect(messages(back) == ["while away"], "once, with the resume: \(messages(back))")
    }
}
