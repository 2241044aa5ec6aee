import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 13 (and issue 30's "a resync reads one snapshot per channel"): after a gap in
/// `seq` a node sends a fresh snapshot to each of its presence sessions in the channel. It read
/// one snapshot from Redis per local session; the roster is the same for all of them (only a
/// viewer who joined since the last interval event sees itself added), so it now reads one per
/// channel, with each viewer's own entry in the same reply.
@Suite("Cluster: a resync reads one snapshot per channel")
struct ClusterResyncReadTests {
    @Test("five local sessions in a channel: one snapshot read, five snapshots sent, each showing the same roster")
    func oneReadPerChannel() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "resync:")
        var clients: [ClusterBed.Client] = []
        for index in 0..<5 {
            let client = try bed.login("user-\(index)", on: 0)
            #expect(try bed.request(client, "join", ["channel": .string("room"), "state": .object(["n": .string("\(index)")])])["ok"]?.boolValue == true)
            clients.append(client)
        }
        let remote = try bed.login("remote", on: 1)
        #expect(try bed.request(remote, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        try bed.pump(until: { clients.allSatisfy { client in
            client.events.contains { $0.string("type") == "join" && $0.string("publisher") == "remote" }
        } }, what: "every local session heard the remote join")
        for client in clients { client.events.removeAll() }

        var snapshotReads = 0
        bed.dropsStoreCall = { node, commands in
            if node == 0 {
                snapshotReads += commands.filter { if case .script(let script, _) = $0 { script.name == "presence.snapshot" } else { false } }.count
            }
            return false
        }
        let presence = try #require(bed.brokers[0].engines.presence as? ClusterPresence)
        presence.resync(ChannelKey(type: .message, name: Name(unchecked: "room")))
        bed.feed(0, .tick)
        try bed.pump(until: { clients.allSatisfy { client in client.events.contains { $0.string("type") == "snapshot" } } },
                     what: "every local session got a fresh snapshot")
        #expect(snapshotReads == 1, "one snapshot read for the channel, not one per session (\(snapshotReads))")
        for client in clients {
            let snapshot = try #require(client.events.first { $0.string("type") == "snapshot" })
            let users = snapshot["snapshot"]?.arrayValue?.compactMap { $0.string("userId") } ?? []
            #expect(users == ["remote", "user-0", "user-1", "user-2", "user-3", "user-4"], "\(snapshot.compactString)")
        }
    }
}
