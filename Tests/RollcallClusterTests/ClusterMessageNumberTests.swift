import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A node hears a channel's messages on its pub/sub link and answers joins and claims on its
/// command link: the two are not ordered. A message published before a join or a claim ran can
/// reach the node after its answer, and went to the session that had just joined (it was not a
/// member when it was published) or been resumed there (it had got the message on its old
/// node): chaos seeds 37108521913684, 153618922795287 and 80820037631616, `messages`, message
/// 12 after 13. Messages are numbered per channel now (`mq`), and the join and the claim answer
/// the number they saw.
@Suite("Cluster: a late pub/sub message is not given to a session joined or resumed after it was published")
struct ClusterMessageNumberTests {
    private func messages(_ client: ClusterBed.Client) -> [String] {
        client.events.filter { $0.string("event") == "message" }.compactMap { $0["message"]?.stringValue }
    }

    @Test("a session resumed on a node whose pub/sub link lags does not get again what it got on its old node")
    func resumedSessionDoesNotGetAnEarlierMessageTwice() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "msgnumresume:")
        let alice = try bed.member("alice", on: 0)
        let bob = try bed.member("bob", on: 0)
        let carol = try bed.member("carol", on: 1)  // so that node 1 hears the room
        bed.delaysStoreMessage = { index, payload in index == 1 && payload.first != UInt8(ascii: "P") }
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("early")])["ok"]?.boolValue == true)
        try bed.pump(until: { messages(alice) == ["early"] }, what: "alice got it on node 0")
        try bed.holdInRedis(alice)
        let back = try bed.login("alice", on: 1, ["resumeToken": .string(alice.resumeToken)])
        #expect(back.resumed, "alice resumed on node 1")
        bed.delaysStoreMessage = nil
        bed.releaseHeldMessages(node: 1)
        try bed.pump(until: { messages(carol) == ["early"] }, what: "node 1 heard the early message")
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("late")])["ok"]?.boolValue == true)
        try bed.pump(until: { messages(back).contains("late") }, what: "alice gets the next message")
        #expect(messages(back) == ["late"], "the early one was hers on node 0 already: \(messages(back))")
    }

    @Test("a session that joins on a node whose pub/sub link lags gets only what was published after its join, in order")
    func joinerGetsOnlyLaterMessages() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "msgnumjoin:")
        let bob = try bed.member("bob", on: 0)
        let carol = try bed.member("carol", on: 1)
        bed.delaysStoreMessage = { index, payload in index == 1 && payload.first != UInt8(ascii: "P") }
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("before")])["ok"]?.boolValue == true)
        let dave = try bed.member("dave", on: 1)
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("after")])["ok"]?.boolValue == true)
        bed.delaysStoreMessage = nil
        bed.releaseHeldMessages(node: 1)
        try bed.pump(until: { messages(carol) == ["before", "after"] }, what: "node 1 heard both")
        try bed.pump(until: { messages(dave).contains("after") }, what: "dave gets the later one")
        #expect(messages(dave) == ["after"], "published before dave joined: \(messages(dave))")
    }

    @Test("messages that reach the node while a first join is answered wait for the answer, and the later ones follow it")
    func messagesDuringTheJoinWaitForItsAnswer() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "msgnumwait:")
        let bob = try bed.member("bob", on: 0)
        _ = try bed.member("carol", on: 1)
        // Dave's join runs in Redis, its answer is slow; bob publishes meanwhile.
        bed.delaysStoreReply = { index, commands in
            index == 1 && commands.contains { if case .script(let script, _) = $0 { script.name == "presence.join" } else { false } }
        }
        let dave = try bed.login("dave", on: 1)
        dave.nextId += 1
        bed.feed(1, .received(dave.connection, JSON.object(JSONObject([
            ("id", .int(dave.nextId)), ("op", .string("join")), ("channel", .string("room")),
        ])).encoded()))
        let prefix = "msgnumwait:"
        try bed.pump(until: { (try? bed.redis.command(["HEXISTS", prefix + "{0}c:m:4:room:st", "dave"])) == ":1" },
                     what: "dave's join ran in Redis")
        bed.delaysStoreReply = nil
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("during")])["ok"]?.boolValue == true)
        try? bed.pump(until: { !messages(dave).isEmpty }, timeout: 0.3, what: "a message before the join's answer")
        #expect(messages(dave).isEmpty, "nothing before the join's answer: \(messages(dave))")
        bed.releaseHeldReplies(node: 1)
        try bed.pump(until: { dave.replies[dave.nextId] != nil && !messages(dave).isEmpty }, what: "the join's answer, then the message")
        #expect(dave.replies[dave.nextId]?["ok"]?.boolValue == true)
        #expect(messages(dave) == ["during"], "\(messages(dave))")
    }
}
