import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A publish that ran twice with the same channel number — once on a master stopped past its
/// failover, once on the new master for the client's retry (chaos seed 205301057074642 on a
/// Redis Cluster) — reaches each session once (docs/cluster.md, "Delivery on each node").
@Suite("Cluster: a message event heard twice is delivered once")
struct ClusterRepeatedMessageTests {
    @Test("a second message event with the same number and publishing session is dropped and counted; the next number goes out")
    func theRepeatIsDropped() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "rep:")
        let watcher = try bed.login("watcher", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(watcher, "join", ["channel": "room", "messages": true])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": "room"])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "publish", ["channel": "room", "message": "one"])["ok"]?.boolValue == true)
        try bed.pump(until: { watcher.events.contains { $0.string("event") == "message" } }, what: "bob's first message")
        let events = ClusterKeys(prefix: "rep:").channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).events
        func publish(number: Int, _ text: String) throws {
            let payload = Array("N\(number)\n\(bob.sessionId)\n\n".utf8)
                + JSON.object(JSONObject([("event", "message"), ("channel", "room"), ("message", .string(text))])).encoded()
            _ = try bed.run([.command([Array("PUBLISH".utf8), Array(events.utf8), payload])], on: 1)
        }
        // The same number again (its first run's retry): not delivered.
        try publish(number: 1, "one, run again")
        // The next number goes out.
        try publish(number: 2, "two")
        try bed.pump(until: { watcher.events.filter { $0.string("event") == "message" }.count >= 2 }, what: "the second message")
        let messages = watcher.events.filter { $0.string("event") == "message" }.compactMap { $0.string("message") }
        #expect(messages == ["one", "two"], "\(messages)")
        #expect(bed.brokers[0].metrics.clusterRepeatedMessagesDropped == 1)
    }

    @Test("a channel remembers the last 64 message events: an older repeat is delivered (the window is bounded)")
    func theWindowIsBounded() {
        let channel = LocalChannel()
        for number in 1...LocalChannel.recentMessagesKept { #expect(!channel.isRepeat(number: number, publisher: "s")) }
        #expect(channel.isRepeat(number: 1, publisher: "s"))
        #expect(!channel.isRepeat(number: 1, publisher: "t"), "another session's number 1 is another message")
        #expect(!channel.isRepeat(number: 1000, publisher: "s"))
        // t's 1 and s's 1000 took the places of the two oldest, s's 1 and 2.
        #expect(!channel.isRepeat(number: 2, publisher: "s"))
        #expect(channel.isRepeat(number: LocalChannel.recentMessagesKept, publisher: "s"))
        #expect(channel.isRepeat(number: 1000, publisher: "s"))
    }
}
