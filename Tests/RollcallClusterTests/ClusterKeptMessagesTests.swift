import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Messages kept for a held session live in each channel's own slot (`P{g}c:<id>:k:<session>`,
/// docs/cluster.md "Kept messages"), so a publish runs on one Redis Cluster slot; the resume
/// gathers them from every channel, with what the old node heard before the hold, in publish
/// order and within `heldMessageBytes` in all (PROTOCOL §5).
@Suite("Cluster: messages kept for a held session, per channel")
struct ClusterKeptMessagesTests {
    private func attempt(_ bed: ClusterBed, _ client: ClusterBed.Client, _ op: String, _ arguments: [String: JSON] = [:]) throws -> JSON {
        let reply = try bed.request(client, op, arguments)
        #expect(reply["ok"]?.boolValue == true, "\(op): \(reply.compactString)")
        return reply
    }

    /// Two channel names whose key groups differ from each other and from `user`'s.
    private func channelsInOtherGroups(_ keys: ClusterKeys, than user: String) -> [String] {
        let userGroup = keys.userGroup(Name(unchecked: user))
        var names: [String] = []
        var groups: Set<Int> = [userGroup]
        for index in 0..<1000 where names.count < 2 {
            let name = "room\(index)"
            let group = keys.channel(ChannelKey(type: .message, name: Name(unchecked: name))).groupNumber
            if groups.insert(group).inserted { names.append(name) }
        }
        return names
    }

    /// A bed of two nodes laid out as on Redis Cluster (1024 key groups), with two channels of
    /// other groups than alice's.
    private func bedOf1024Groups(prefix: String, slotAudit: Bool = false) throws -> (bed: ClusterBed, keys: ClusterKeys, rooms: [String]) {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix, heartbeatSeconds: 0.1, slotAudit: slotAudit)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
        return (bed, keys, channelsInOtherGroups(keys, than: "alice"))
    }

    /// The base key of channel `name`.
    private func base(_ keys: ClusterKeys, _ name: String) -> String {
        keys.channel(ChannelKey(type: .message, name: Name(unchecked: name))).base
    }

    private func messages(_ client: ClusterBed.Client) -> [String] {
        client.events.filter { $0.string("event") == "message" }.compactMap { $0["message"]?.stringValue }
    }

    /// alice (node 0) and bob (node 1) in `rooms`, alice joined with messages; alice held.
    private func heldAlice(_ bed: ClusterBed, in rooms: [String]) throws -> (alice: ClusterBed.Client, bob: ClusterBed.Client) {
        let alice = try bed.login("alice", on: 0), bob = try bed.login("bob", on: 1)
        for room in rooms {
            _ = try attempt(bed, alice, "join", ["channel": .string(room), "messages": true])
            _ = try attempt(bed, bob, "join", ["channel": .string(room)])
        }
        try bed.holdInRedis(alice)
        return (alice, bob)
    }

    /// alice's session resumed on `node`: the client, and how many messages its result says were dropped.
    private func resume(_ bed: ClusterBed, _ alice: ClusterBed.Client, on node: Int) throws -> (client: ClusterBed.Client, dropped: Int?) {
        let again = bed.open(on: node)
        let reply = try attempt(bed, again, "login", ["userId": "alice", "resumeToken": .string(alice.resumeToken)])
        #expect(reply["result"]?["resumed"]?.boolValue == true, "\(reply.compactString)")
        _ = try attempt(bed, again, "ping")
        return (again, reply["result"]?["messagesDropped"]?.numberValue?.intValue)
    }

    @Test("with 1024 key groups a publish keeps the message in its channel's slot, and the resume gets both channels' messages in publish order")
    func keptPerChannelInPublishOrder() throws {
        let (bed, keys, rooms) = try bedOf1024Groups(prefix: "keptg:", slotAudit: true)
        let (alice, bob) = try heldAlice(bed, in: rooms)
        let sent = ["a1", "b1", "a2", "b2", "a3"]
        for (index, text) in sent.enumerated() {
            _ = try attempt(bed, bob, "publish", ["channel": .string(rooms[index % 2]), "message": .string(text)])
        }
        for room in rooms {
            #expect(try bed.redis.command(["EXISTS", base(keys, room) + ":k:" + alice.sessionId]) == ":1", "kept in \(room)'s own slot")
        }
        let (back, dropped) = try resume(bed, alice, on: 1)
        try bed.pump(until: { messages(back).count >= sent.count }, what: "the kept messages")
        #expect(messages(back) == sent, "in publish order, once")
        #expect(dropped == 0)
        // A message after the resume comes live, once.
        _ = try attempt(bed, bob, "publish", ["channel": .string(rooms[0]), "message": "live"])
        try bed.pump(until: { messages(back).last == "live" }, what: "the live message")
        #expect(messages(back) == sent + ["live"])
        for room in rooms { _ = try attempt(bed, back, "leave", ["channel": .string(room)]) }
        _ = try attempt(bed, back, "logout")
        let crossing = try bed.crossSlotScripts(among: LuaScriptTests.everyEngineScript)
        #expect(crossing.isEmpty, "crossing: \(crossing.sorted())")
    }

    @Test("heldMessageBytes holds across channels: the oldest stay, the rest are counted as dropped", arguments: [1, KeyGroups.clusterCount])
    func limitAcrossChannels(groups: Int) throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = groups
        let probe = ClusterKeys(prefix: "keptlimit:", groups: KeyGroups(count: KeyGroups.clusterCount))
        let rooms = channelsInOtherGroups(probe, than: "alice")
        // Room for three of the five events (each about the same size), in all; each channel alone keeps all of its own.
        let sample = Array(#"{"event":"message","channel":"room00","channelType":"message","from":"bob","message":"m0"}"#.utf8).count
        configuration.limits.heldMessageBytes = 3 * (sample + 40)
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "keptlimit:", heartbeatSeconds: 0.1)
        let (alice, bob) = try heldAlice(bed, in: rooms)
        let sent = ["m1", "m2", "m3", "m4", "m5"]
        for (index, text) in sent.enumerated() {
            _ = try attempt(bed, bob, "publish", ["channel": .string(rooms[index % 2]), "message": .string(text)])
        }
        let (back, dropped) = try resume(bed, alice, on: 1)
        try bed.pump(until: { messages(back).count + (dropped ?? 0) >= sent.count }, what: "the kept messages (\(String(describing: dropped)) dropped)")
        let got = messages(back)
        #expect(got.count + (dropped ?? -1) == sent.count, "each message delivered or counted: got \(got), dropped \(dropped)")
        #expect(got == Array(sent.prefix(got.count)), "the oldest stay: \(got)")
        #expect((1..<sent.count).contains(got.count), "some fit, some not: \(got)")
    }

    @Test("with 1024 key groups a claim whose channels' answer was lost is made void, and the retry gets the kept messages once")
    func aVoidClaimPutsTheChannelsMessagesBack() throws {
        let (bed, keys, rooms) = try bedOf1024Groups(prefix: "keptvoid:")
        let (alice, bob) = try heldAlice(bed, in: rooms)
        _ = try attempt(bed, bob, "publish", ["channel": .string(rooms[0]), "message": "one"])
        _ = try attempt(bed, bob, "publish", ["channel": .string(rooms[1]), "message": "two"])
        // The refences ran (they took the kept messages) but their answer was lost.
        bed.failFirstCall(running: "presence.refence", on: 1, answerLost: true)
        let first = try bed.request(bed.open(on: 1), "login", ["userId": "alice", "resumeToken": .string(alice.resumeToken)])
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        let firstRoom = base(keys, rooms[0])
        try bed.pump(until: { (try? bed.redis.command(["EXISTS", firstRoom + ":k:" + alice.sessionId])) == ":1" },
                     what: "the void claim's take put back")
        let (back, dropped) = try resume(bed, alice, on: 1)
        try bed.pump(until: { messages(back).count >= 2 }, what: "the kept messages")
        #expect(messages(back) == ["one", "two"])
        #expect(dropped == 0)
    }

    @Test("a held session's end leaves nothing kept for it in its channels")
    func anEndForgetsWhatChannelsKept() throws {
        let (bed, keys, rooms) = try bedOf1024Groups(prefix: "keptend:")
        let (alice, bob) = try heldAlice(bed, in: rooms)
        _ = try attempt(bed, bob, "publish", ["channel": .string(rooms[0]), "message": "one"])
        let firstRoom = base(keys, rooms[0])
        #expect(try bed.redis.command(["EXISTS", firstRoom + ":k:" + alice.sessionId]) == ":1")
        _ = try bed.api("disconnectUser", ["userId": "alice"], on: 1)
        try bed.pump(until: {
            (try? bed.redis.command(["EXISTS", firstRoom + ":k:" + alice.sessionId])) == ":0"
                && (try? bed.redis.command(["HEXISTS", firstRoom + ":kb", alice.sessionId])) == ":0"
        }, what: "the kept messages gone with the end")
    }
}
