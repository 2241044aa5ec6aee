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
    private func isPublish(_ commands: [StoreCommand]) -> Bool {
        commands.contains { if case .script(let script, _) = $0 { script.name == "presence.publish" } else { false } }
    }

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

        var faults = 0
        let fault: (Int, [StoreCommand]) -> Bool = { [self] node, commands in
            guard node == 0, isPublish(commands), faults == 0 else { return false }
            faults += 1
            return true
        }
        if answerLost { bed.losesStoreReply = fault } else { bed.dropsStoreCall = fault }
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
}
