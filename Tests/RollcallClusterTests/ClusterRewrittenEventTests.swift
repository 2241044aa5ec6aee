import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Chaos seed 22843738030636 on a Redis Cluster (session 45): a master stopped past its
/// failover had published `join` u4 as `seq` 65 and lost it (too short a loss for the epoch to
/// be renewed); the new master used 65 for another change. Every node dropped the second 65 as
/// a repeat, so every roster kept u4 for good. A node now compares the bytes of the last event
/// it delivered: the same `seq` with other bytes resyncs the channel (docs/cluster.md,
/// "Delivery on each node").
@Suite("Cluster: an event whose seq was used again")
struct ClusterRewrittenEventTests {
    @Test("the seq delivered last comes again with other bytes: the channel's sessions get a fresh snapshot, and it is counted")
    func aRewrittenSeqResyncs() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "rewrite:")
        let watcher = try bed.login("watcher", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(watcher, "join", ["channel": "room"])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": "room"])["ok"]?.boolValue == true)
        try bed.pump(until: { watcher.events.contains { $0.string("type") == "join" && $0.string("publisher") == "bob" } },
                     what: "bob's join")
        let join = try #require(watcher.events.last { $0.string("type") == "join" })
        let seq = try #require(join["seq"]?.numberValue?.intValue)
        let snapshots = watcher.events.filter { $0.string("type") == "snapshot" }.count
        let events = ClusterKeys(prefix: "rewrite:").channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).events
        func publish(_ event: JSON) throws {
            let payload = Array("P\(seq)\nmallory\n".utf8) + event.encoded()
            _ = try bed.run([.command([Array("PUBLISH".utf8), Array(events.utf8), payload])], on: 1)
        }
        // Another event with the same seq: the node's rosters followed an event Redis lost.
        try publish(JSON.object(JSONObject([("event", "presence"), ("type", "join"), ("channel", "room"), ("publisher", "mallory"),
                                            ("seq", .int(seq))])))
        try bed.pump(until: { watcher.events.filter { $0.string("type") == "snapshot" }.count > snapshots },
                     what: "a fresh snapshot for the watcher")
        let snapshot = try #require(watcher.events.last { $0.string("type") == "snapshot" })
        let members = (snapshot["snapshot"]?.arrayValue ?? []).compactMap { $0.string("userId") }.sorted()
        #expect(members == ["bob", "watcher"], "the snapshot is Redis' roster: \(members)")
        #expect(!watcher.events.contains { $0.string("publisher") == "mallory" }, "the rewritten event is not delivered")
        #expect(bed.brokers[0].metrics.clusterEventsRewritten == 1)
    }
}
