import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A node whose pub/sub link is cut misses the `adopted` message that tells it another node
/// resumed a session it holds. When the session comes back to it later, its copy is stale:
/// the session joined and left channels elsewhere meanwhile. It resumed that copy, and the
/// answer listed a channel the session had left (chaos seed 124295245245791, `resume`: "the
/// resumed session is still in the channel, though its leave was confirmed"). The claim's
/// answer names the node Redis had the session on: not this one, so the copy goes and the
/// session is taken from Redis' record.
@Suite("Cluster: a resume on a node holding a stale copy of the session follows Redis")
struct ClusterStaleCopyResumeTests {
    private func channels(_ reply: JSON?) -> [String] {
        (reply?["result"]?["channels"]?.arrayValue ?? []).compactMap { $0.string("channel") }.sorted()
    }

    @Test("held on node 0, resumed on node 1 (node 0 misses adopted), leaves a channel there, back on node 0: only the channels Redis has")
    func staleCopyIsReplaced() throws {
        let prefix = "stalecopy:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let alice = try bed.member("alice", on: 0)
        #expect(try bed.request(alice, "join", ["channel": .string("lobby")])["ok"]?.boolValue == true)
        let bob = try bed.member("bob", on: 0, of: "lobby")
        try bed.holdInRedis(alice)
        // Node 0's pub/sub link lags: the claim's `adopted` does not reach it.
        bed.delaysStoreMessage = { index, payload in index == 0 && payload.starts(with: Array("adopted".utf8)) }
        let onOne = try bed.login("alice", on: 1, ["resumeToken": .string(alice.resumeToken)])
        #expect(onOne.resumed)
        #expect(try bed.request(onOne, "leave", ["channel": .string("lobby")])["ok"]?.boolValue == true)
        try bed.holdInRedis(onOne)
        let back = bed.open(on: 0)
        let login = JSON.object(JSONObject([("id", .int(1)), ("op", .string("login")), ("resumeToken", .string(onOne.resumeToken)),
                                            ("userId", .string("alice"))]))
        bed.feed(0, .received(back.connection, login.encoded()))
        try bed.pump(until: { back.replies[1] != nil }, what: "the resume on node 0")
        #expect(back.replies[1]?["result"]?["resumed"]?.boolValue == true, "\(back.replies[1]?.compactString ?? "")")
        #expect(channels(back.replies[1]) == ["room"], "lobby was left on node 1: \(back.replies[1]?.compactString ?? "")")
        // The late `adopted` names the token claimed then: node 0's session is under a newer one.
        bed.delaysStoreMessage = nil
        bed.releaseHeldMessages(node: 0)
        back.nextId = 1
        #expect(try bed.request(back, "ping")["ok"]?.boolValue == true, "still connected")
        #expect(back.closedWith == nil)
        // Node 0 no longer counts her in lobby: bob's publish there does not reach her.
        #expect(try bed.request(bob, "publish", ["channel": .string("lobby"), "message": .string("hi")])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "publish", ["channel": .string("room"), "message": .string("hello")])["ok"]?.boolValue == true)
        try bed.pump(until: { back.events.contains { $0["message"]?.stringValue == "hello" } }, what: "the room's message")
        let heard = back.events.filter { $0.string("event") == "message" }.compactMap { $0["message"]?.stringValue }
        #expect(heard == ["hello"], "\(heard)")
    }
}
