import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// A first join of a channel on a node runs its script only once Redis confirmed the node's
/// subscription of the channel's events (docs/cluster.md, "Hearing a channel before joining
/// it"). Before, the script could run first: an event published between the script and the
/// subscription never reached the node, and its sessions' roster stayed stale until a later
/// event showed the gap (found by CI on a loaded machine: a watcher saw a fresh snapshot
/// instead of bob's join and leave).
@Suite("Cluster: a node hears a channel before its first join there")
struct ClusterHearingBeforeJoiningTests {
    @Test("the join waits for the subscription's confirmation; then the events that follow it arrive as events")
    func theJoinWaitsForTheSubscription() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "hear:")
        let watcher = try bed.login("watcher", on: 0)
        let bob = try bed.login("bob", on: 1)
        bed.delaysListening = { $0 == 0 }
        let join = bed.send(watcher, "join", ["channel": "room"])
        try bed.pump(until: { bed.heldListenings[0, default: 0] > 0 }, what: "node 0's subscription of room confirmed by Redis")
        // Confirmed in Redis but not yet told to the node: its join has not run.
        #expect(watcher.replies[join] == nil, "\(watcher.replies[join]?.compactString ?? "")")
        let room = ClusterKeys(prefix: "hear:").channel(ChannelKey(type: .message, name: Name(unchecked: "room")))
        #expect(try bed.redis.command(["EXISTS", room.base]) == ":0", "no member in Redis yet")
        bed.releaseHeldListening(node: 0)
        try bed.pump(until: { watcher.replies[join] != nil }, what: "the watcher's join answered")
        #expect(watcher.replies[join]?["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": "room"])["ok"]?.boolValue == true)
        try bed.pump(until: { watcher.events.contains { $0.string("type") == "join" && $0.string("publisher") == "bob" } },
                     what: "bob's join as an event: \(watcher.events.map(\.compactString))")
        #expect(watcher.events.filter { $0.string("type") == "snapshot" }.count == 1, "\(watcher.events.map(\.compactString))")
    }

    @Test("no confirmation at all: the join goes on after the wait's bound, and a second join of the channel does not wait")
    func theWaitIsBounded() throws {
        let bed = try ClusterBed(nodes: 1, configuration: Configuration(), prefix: "hearb:")
        let alice = try bed.login("alice", on: 0)
        let carol = try bed.login("carol", on: 0)
        bed.delaysListening = { _ in true }
        bed.dropsListening = true
        let started = Date()
        #expect(try bed.request(alice, "join", ["channel": "room"])["ok"]?.boolValue == true)
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= Double(ClusterPresence.hearingWaitMs) / 1000 * 0.9, "waited \(waited) s")
        #expect(bed.heldListenings[0, default: 0] > 0)
        // The node waited once: it takes the channel as heard (a link that is down resubscribes
        // every channel and compares their seqs when it is back), so carol's join does not wait.
        let second = Date()
        #expect(try bed.request(carol, "join", ["channel": "room"])["ok"]?.boolValue == true)
        #expect(Date().timeIntervalSince(second) < Double(ClusterPresence.hearingWaitMs) / 1000 * 0.9)
    }
}
