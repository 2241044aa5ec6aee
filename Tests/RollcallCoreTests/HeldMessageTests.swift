import RollcallProtocol
import Testing
@testable import RollcallCore

/// PROTOCOL §5 (1.1): `message` events sent to a held session are kept, up to
/// `limits.heldMessageBytes`, and delivered right after the snapshots of its resume.
@Suite("messages for held sessions")
struct HeldMessageTests {
    /// alice joined `lobby` and dropped; returns her resume token.
    private func heldAlice(_ bench: SessionTestBench) throws -> (token: JSON, bob: ConnectionID) {
        let (alice, login) = bench.login("alice")
        bench.request("join", ["channel": "lobby"], on: alice)
        bench.request("join", ["channel": "other"], on: alice)
        let (bob, _) = bench.login("bob")
        bench.request("join", ["channel": "lobby"], on: bob)
        bench.end(alice, .abnormal(.dropped))
        return (try #require(login["result"]?["resumeToken"]), bob)
    }

    @Test("the resume delivers the kept messages in order, after the reply and the snapshots")
    func deliveredAfterSnapshots() throws {
        let bench = SessionTestBench()
        let (token, bob) = try heldAlice(bench)
        for text in ["one", "two", "three"] {
            let reply = bench.request("publish", ["channel": "lobby", "message": .string(text)], on: bob)
            #expect(reply["result"]?["recipients"] == 0)   // held sessions are not counted
        }
        let resumed = bench.open()
        let objects = bench.sendRaw(
            JSON.object(["id": 1, "op": "login", "userId": "alice", "resumeToken": token]).compactString, on: resumed)
        #expect(objects.first?["result"]?["resumed"] == true)
        #expect(objects.first?["result"]?["messagesDropped"] == 0)
        let kinds = objects.dropFirst().map { ($0["event"]?.stringValue ?? "", $0["type"]?.stringValue ?? $0["message"]?.stringValue ?? "") }
        #expect(kinds.map(\.0) == ["presence", "presence", "message", "message", "message"])
        #expect(kinds.suffix(3).map(\.1) == ["one", "two", "three"])
    }

    @Test("past heldMessageBytes the oldest kept messages stay and later ones are counted as dropped")
    func capKeepsTheOldest() throws {
        let bench = SessionTestBench { $0.limits.heldMessageBytes = 300 }
        let (token, bob) = try heldAlice(bench)
        for index in 1...10 {
            bench.request("publish", ["channel": "lobby", "message": .string("message \(index)")], on: bob)
        }
        let (resumed, reply) = bench.login("alice", extra: ["resumeToken": token])
        let messages = bench.received(on: resumed).compactMap { $0["event"] == "message" ? $0["message"]?.stringValue : nil }
        #expect(!messages.isEmpty && messages.count < 10)
        #expect(messages == (1...messages.count).map { "message \($0)" })
        #expect(reply["result"]?["messagesDropped"] == .int(10 - messages.count))
    }

    @Test("heldMessageBytes 0 keeps nothing; a fresh login reports no messagesDropped")
    func zeroKeepsNothing() throws {
        let bench = SessionTestBench { $0.limits.heldMessageBytes = 0 }
        let (token, bob) = try heldAlice(bench)
        bench.request("publish", ["channel": "lobby", "message": "hi"], on: bob)
        let (resumed, reply) = bench.login("alice", extra: ["resumeToken": token])
        #expect(reply["result"]?["messagesDropped"] == 1)
        #expect(!bench.received(on: resumed).contains { $0["event"] == "message" })
        let (_, fresh) = bench.login("carol")
        #expect(fresh["result"]?["messagesDropped"] == nil)
    }

    @Test("kept messages go away with the session when its hold expires")
    func expiryDiscards() throws {
        let bench = SessionTestBench { $0.presence.timeoutSeconds = 2 }
        let (token, bob) = try heldAlice(bench)
        bench.request("publish", ["channel": "lobby", "message": "lost"], on: bob)
        bench.advance(seconds: 2.5)
        let (resumed, reply) = bench.login("alice", extra: ["resumeToken": token])
        #expect(reply["result"]?["resumed"] == false)
        #expect(!bench.received(on: resumed).contains { $0["event"] == "message" })
    }
}
