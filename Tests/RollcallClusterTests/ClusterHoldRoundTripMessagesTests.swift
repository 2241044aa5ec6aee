import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 12: a message published while a session's connection had dropped but before
/// Redis ran its `session.hold` is not kept by Redis (the session was live there); it reaches
/// the old node, which kept it in memory. Such a message was lost when the session resumed on
/// another node, and also when it reached the old node after the hold's answer (whatever the
/// node). The node now hands what it kept to Redis once every message published before the
/// hold has reached it, and a resume waits for that: the resumed session gets each message
/// once, in order, wherever it resumes.
@Suite("Cluster: messages that reach the old node around session.hold are not lost")
struct ClusterHoldRoundTripMessagesTests {
    private func messages(_ client: ClusterBed.Client) -> [JSON] {
        client.events.filter { $0.string("event") == "message" }.compactMap { $0["message"] }
    }

    @Test("a message published before the hold ran, heard by the old node before or after the hold's answer, reaches the resumed session once, in order, on either node",
          arguments: [(false, 0), (false, 1), (true, 0), (true, 1)])
    func theMessageFollowsTheSession(heardAfterTheAnswer: Bool, resumeOn node: Int) throws {
        let prefix = "holdtrip\(heardAfterTheAnswer ? "a" : "b")\(node):"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let alice = try bed.login("alice", on: 0)
        let carol = try bed.login("carol", on: 0)
        let bob = try bed.login("bob", on: 1)
        for client in [alice, carol, bob] {
            #expect(try bed.request(client, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        }
        // Node 0's subscriber lags: bob's first message, published while alice is live in
        // Redis, reaches node 0 only after her connection dropped.
        bed.delaysStoreMessage = { index, _ in index == 0 }
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("before")])["ok"]?.boolValue == true)
        if heardAfterTheAnswer {
            bed.disconnect(alice, abnormally: true)
            try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}held"])) == ":1" }, what: "alice held in Redis")
            // Carol's read answers after the hold's answer (one command link, in order).
            #expect(try bed.request(carol, "getOnlineUsers", ["channel": .string("room")])["ok"]?.boolValue == true)
        } else {
            let isHold: ([StoreCommand]) -> Bool = { commands in
                commands.contains { if case .script(let script, _) = $0 { script.name == "session.hold" } else { false } }
            }
            bed.beforeStoreCall = { [unowned bed] index, commands in
                guard index == 0, isHold(commands) else { return }
                bed.beforeStoreCall = nil
                bed.releaseHeldMessages(node: 0)
                bed.delaysStoreMessage = nil
            }
            bed.disconnect(alice, abnormally: true)
            try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}held"])) == ":1" }, what: "alice held in Redis")
        }
        bed.releaseHeldMessages(node: 0)
        bed.delaysStoreMessage = nil
        // Published once Redis has the hold: Redis keeps it.
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("after")])["ok"]?.boolValue == true)

        let back = try bed.login("alice", on: node, ["resumeToken": .string(alice.resumeToken)])
        #expect(back.resumed, "alice resumed")
        try? bed.pump(until: { messages(back).count >= 2 }, timeout: 1, what: "alice's messages")
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true)
        #expect(messages(back) == ["before", "after"], "each once, in order: \(messages(back))")
        #expect(messages(carol) == ["before", "after"])
    }

    @Test("a resume on another node made before the old node handed over what it heard waits for it, then gets every message once, in order")
    func aResumeWaitsForTheHandOver() throws {
        let prefix = "holdwait:"
        // Heartbeats of 1 s: a resume waits at most 2.5 of them for the hand-over.
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix, heartbeatSeconds: 1)
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        for client in [alice, bob] {
            #expect(try bed.request(client, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        }
        // Node 0 hears nothing for now: neither bob's first message nor the hold's `held`.
        bed.delaysStoreMessage = { index, _ in index == 0 }
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("before")])["ok"]?.boolValue == true)
        bed.disconnect(alice, abnormally: true)
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}held"])) == ":1" }, what: "alice held in Redis")
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("after")])["ok"]?.boolValue == true)

        let back = bed.open(on: 1)
        let login = JSON.object(JSONObject([("id", .int(1)), ("op", .string("login")), ("resumeToken", .string(alice.resumeToken)),
                                            ("userId", .string("alice"))]))
        bed.feed(1, .received(back.connection, login.encoded()))
        try? bed.pump(until: { back.replies[1] != nil }, timeout: 0.3, what: "the resume")
        #expect(back.replies[1] == nil, "the resume waits for node 0's hand-over")
        bed.releaseHeldMessages(node: 0)
        bed.delaysStoreMessage = nil
        try bed.pump(until: { back.replies[1] != nil }, timeout: 5, what: "the resume")
        #expect(back.replies[1]?["result"]?["resumed"]?.boolValue == true, "\(back.replies[1]?.compactString ?? "")")
        back.nextId = 1
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true)
        #expect(messages(back) == ["before", "after"], "each once, in order: \(messages(back))")
    }
}
