import Foundation
@testable import RollcallCore
import RollcallProtocol
import RollcallTestSupport
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

    @Test("the channel keeps at most 4096 sessions' publish tokens; the newest still makes its retry a no-op")
    func theTokensAreBounded() throws {
        let bed = try ClusterBed(nodes: 1, configuration: Configuration(), prefix: "pubtokens:")
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        let presence = try #require(bed.brokers[0].engines.presence as? ClusterPresence)
        let room = ChannelKey(type: .message, name: Name(unchecked: "room"))
        let channel = presence.channelArguments(room, presence.keys.channel(room), intervalHead: false)
        func publish(_ session: String, token: String) throws -> Int64? {
            let command = PresenceScripts.publish(channel, session: session, token: token, requiredMember: nil,
                                                  event: Array("{}".utf8), prefix: "pubtokens:", heldMessageBytes: 0)
            let reply = try bed.run([command], on: 0).first ?? .null
            if case .error(let message) = reply { throw TestSupportError("publish failed: \(message)") }
            return try bed.run([.command(["HGET", channel.base, "mq"].map { Array($0.utf8) })], on: 0).first?.integer
        }
        func tokensKept() throws -> Int64? {
            try bed.run([.command(["HLEN", channel.base + ":lp"].map { Array($0.utf8) })], on: 0).first?.integer
        }
        // The tokens of 4095 sessions' publishes (written directly: one command), then the
        // 4096th session's publish: the hash is full, and keeps it.
        let tokens = (1...4095).flatMap { ["s\($0)", "t\($0)"] }
        _ = try bed.run([.command((["HSET", channel.base + ":lp"] + tokens).map { Array($0.utf8) })], on: 0)
        let before = try publish("s4096", token: "t4096") ?? 0
        #expect(try tokensKept() == 4096)
        // The same session again with a new token: no growth, the message goes out.
        #expect(try publish("s1", token: "t1-again") == before + 1)
        #expect(try tokensKept() == 4096)
        // A 4097th session: the hash starts again with its token alone, and its retry is a no-op.
        #expect(try publish("s4097", token: "t4097") == before + 2)
        #expect(try tokensKept() == 1)
        #expect(try publish("s4097", token: "t4097") == before + 2, "a retry of the newest publish is not numbered again")
    }
}
