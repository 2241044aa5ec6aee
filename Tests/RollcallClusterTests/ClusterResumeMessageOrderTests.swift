import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// PROTOCOL §5: the messages kept for a held session "are delivered in order right after the
/// snapshots" at its resume. In cluster mode the snapshots come from Redis after the resume's
/// reply, and the session is a live recipient from that reply on: a message published in
/// that round trip went out at once, ahead of the older kept ones (chaos seed
/// 187042061582177, `messages`: message 7 before message 6). Such a message now waits behind
/// the kept ones.
@Suite("Cluster: a resumed session gets its kept messages before the live ones")
struct ClusterResumeMessageOrderTests {
    private func messages(_ client: ClusterBed.Client) -> [JSON] {
        client.events.filter { $0.string("event") == "message" }.compactMap { $0["message"] }
    }

    @Test("a message published while the resume's snapshots are read comes after the kept messages, and after the snapshot",
          arguments: [0, 1])
    func liveMessagesWaitBehindTheKeptOnes(resumeOn node: Int) throws {
        let prefix = "resumeorder\(node):"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let alice = try bed.member("alice", on: 0)
        let bob = try bed.member("bob", on: 1)
        try bed.holdInRedis(alice)
        for text in ["kept 1", "kept 2"] {
            #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string(text)])["ok"]?.boolValue == true)
        }
        // The resume's snapshot read is slow to answer; bob publishes meanwhile.
        bed.delaysStoreReply = { index, commands in
            index == node && commands.contains { if case .script(let script, _) = $0 { script.name == "presence.snapshot" } else { false } }
        }
        let back = try bed.login("alice", on: node, ["resumeToken": .string(alice.resumeToken)])
        #expect(back.resumed, "alice resumed")
        bed.delaysStoreReply = nil
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("live")])["ok"]?.boolValue == true)
        try? bed.pump(until: { !messages(back).isEmpty }, timeout: 0.3, what: "a message before the snapshot")
        #expect(messages(back).isEmpty, "nothing before the snapshot: \(messages(back))")
        bed.releaseHeldReplies(node: node)
        try bed.pump(until: { messages(back).count >= 3 }, what: "alice's messages")
        #expect(messages(back) == ["kept 1", "kept 2", "live"], "kept ones first, each once: \(messages(back))")
        let kinds = back.events.compactMap { $0.string("type") ?? $0.string("event") }
        #expect(kinds.firstIndex(of: "snapshot").map { $0 < kinds.firstIndex(of: "message")! } == true, "the snapshot first: \(kinds)")
    }

    @Test("a message the node hears between a claim running in Redis and its answer, for the session it holds, comes after the kept ones (the resume on the holding node)")
    func aMessageHeardBeforeTheClaimsAnswerWaitsToo() throws {
        let prefix = "resumeclaimorder:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let alice = try bed.member("alice", on: 0)
        let bob = try bed.member("bob", on: 0)
        let carol = try bed.member("carol", on: 0)
        try bed.holdInRedis(alice)
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("kept")])["ok"]?.boolValue == true)
        // Alice resumes on node 0, which holds her; the claim runs, its answer is slow, and
        // bob's next message — live for her in Redis by then — reaches node 0 first.
        bed.delaysStoreReply = { index, commands in
            index == 0 && commands.contains { if case .script(let script, _) = $0 { script.name == "session.claim" } else { false } }
        }
        let back = bed.open(on: 0)
        let login = JSON.object(JSONObject([("id", .int(1)), ("op", .string("login")), ("resumeToken", .string(alice.resumeToken)),
                                            ("userId", .string("alice"))]))
        bed.feed(0, .received(back.connection, login.encoded()))
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", prefix + "{0}held"])) == ":0" }, what: "the claim run in Redis")
        bed.delaysStoreReply = nil
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("live")])["ok"]?.boolValue == true)
        try bed.pump(until: { messages(carol) == ["kept", "live"] }, what: "node 0 heard the live message")
        #expect(back.replies[1] == nil, "the claim's answer still waits")
        bed.releaseHeldReplies(node: 0)
        try bed.pump(until: { back.replies[1] != nil }, what: "the resume")
        #expect(back.replies[1]?["result"]?["resumed"]?.boolValue == true, "\(back.replies[1]?.compactString ?? "")")
        try bed.pump(until: { messages(back).count >= 2 }, what: "alice's messages")
        back.nextId = 1
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true)
        #expect(messages(back) == ["kept", "live"], "kept first, each once: \(messages(back))")
    }
}
