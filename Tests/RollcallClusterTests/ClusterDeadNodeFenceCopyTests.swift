import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import RollcallTestSupport
import Testing

/// docs/cluster.md, "Where the build stands", step 1: a session's fence copy in each channel it
/// joined (`P{<g>}c:<id>:o`) decides in the channel's slot whether a node may act for it. Once
/// the other nodes declare a node dead, the reaper's orphaning makes the copies `''` (in its
/// script with one key group; with 1024, the reaping node sends each channel
/// `presence.refence`), so the dead node, which has not learned it yet, can no longer join,
/// leave or change state there.
@Suite("Cluster: a node declared dead is fenced by the fence copies in its sessions' channels")
struct ClusterDeadNodeFenceCopyTests {
    @Test("a node declared dead cannot join, leave or set state in a channel where its session has a fence copy",
          arguments: [1, KeyGroups.clusterCount])
    func aDeadNodeIsFencedInItsChannels(groups: Int) throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = groups
        let prefix = "deadcopy:"
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: groups))
        let alice = try bed.login("alice", on: 0, ["presenceTimeout": .int(30)])
        let channels = ["kept", "room"].map { ChannelKey(type: .message, name: Name(unchecked: $0)) }
        for key in channels {
            let join = try bed.request(alice, "join", ["channel": .string(key.name.string)])
            #expect(join["ok"]?.boolValue == true, "\(join.compactString)")
        }
        let bases = channels.map { keys.channel($0).base }
        let record = keys.user(Name(unchecked: "alice")).session(alice.sessionId).record
        if groups > 1 {
            // Laid out as on Redis Cluster: alice's record is in another slot than the channels
            // (the first joins went through presence.userSide, which kept her indexes there).
            #expect(keys.channel(channels[0]).groupNumber != keys.userGroup(Name(unchecked: "alice")))
        }
        for (key, base) in zip(channels, bases) {
            #expect(try bed.redis.command(["HGET", base + ":o", alice.sessionId]) == "$2", "the copy names n1 (2 bytes)")
            #expect(try bed.redis.command(["SISMEMBER", keys.user(Name(unchecked: "alice")).session(alice.sessionId).channels,
                                           ClusterKeys.channelId(key)]) == ":1")
        }

        // Node 0 (n1) stops beating but keeps serving: node 1's reaper declares it dead and
        // orphans alice's session, which node 0 does not learn.
        bed.links[0].heartbeat.stop()
        try bed.pump(until: {
            (try? bed.redis.command(["HGET", record, "node"])) == "$0"
                && bases.allSatisfy { (try? bed.redis.command(["HGET", $0 + ":o", alice.sessionId])) == "$0" }
        }, what: "n1 declared dead, alice's session held with no node and its fence copies emptied")
        #expect(try bed.redis.command(["SCARD", bases[0] + ":hm"]) == ":1", "held: kept counts her among its held message sessions")

        // Each change is refused; the first makes the node read alice's record, which names no
        // node, so the node closes her connection with 1001 (session 45): a change sent after
        // that gets no answer.
        let set = try bed.request(alice, "setState", ["channel": .string("room"), "state": .object(["mood": .string("busy")])])
        #expect(set["error"]?.string("code") == "UNAVAILABLE", "\(set.compactString)")
        let join = try bed.request(alice, "join", ["channel": .string("room")])
        #expect(join["error"]?.string("code") == "UNAVAILABLE" || alice.closedWith == .shutdown, "\(join.compactString)")
        let leave = try bed.request(alice, "leave", ["channel": .string("kept")])
        #expect(leave["error"]?.string("code") == "UNAVAILABLE" || alice.closedWith == .shutdown, "\(leave.compactString)")
        // Each refusal asks for the record again while no read of it has answered (a read can
        // fail on a loaded machine, its link busy): a few more changes, until she is closed.
        for _ in 0..<20 where alice.closedWith == nil {
            try? bed.pump(until: { alice.closedWith != nil }, timeout: 0.5, what: "alice's connection closed")
            if alice.closedWith == nil { _ = try? bed.request(alice, "setState", ["channel": .string("room"), "state": .object(["mood": .string("busy")])]) }
        }
        try bed.pump(until: { alice.closedWith != nil }, what: "alice's connection closed: her session is no longer n1's")
        #expect(alice.closedWith == .shutdown)
        // Nothing changed in Redis: still a member of both, with the state she joined with.
        for base in bases {
            #expect(try bed.redis.command(["HEXISTS", base + ":s", alice.sessionId]) == ":1")
            #expect(try bed.redis.command(["HGET", base + ":st", "alice"]) == "$2", "state {}")
        }
    }
}
