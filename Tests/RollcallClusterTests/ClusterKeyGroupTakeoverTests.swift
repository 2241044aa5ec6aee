import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 30, step 3: due interval flushes (`P{<g>}due`) and state-key deadlines
/// (`P{<g>}due:ttl`) are buckets in each channel's key group; every node's reaper asks every
/// group's buckets, so what a node left undone in any group is done by another. Laid out as on
/// Redis Cluster (16 groups), channels in several groups other than group 0. No hold, resume
/// or reap is awaited here (their scripts still assume one group).
@Suite("Cluster: overdue flushes and expiries are picked up from every key group's buckets")
struct ClusterKeyGroupTakeoverTests {
    /// 16 key groups; with `intervalMode`, a channel of two members sends interval events.
    private func configuration(intervalMode: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = 16
        if intervalMode {
            configuration.presence.maxInstantEvents = 1
            configuration.presence.hysteresis = 0
            configuration.presence.intervalSeconds = 0.5
        }
        return configuration
    }

    private func presence(_ bed: ClusterBed, _ node: Int) throws -> ClusterPresence {
        try #require(bed.brokers[node].engines.presence as? ClusterPresence)
    }

    /// Four channel names in four distinct groups, none of them group 0.
    private func channelsInDistinctGroups(_ bed: ClusterBed) throws -> [String] {
        let keys = try presence(bed, 0).keys
        var names: [String] = [], groups: Set<Int> = [0]
        for index in 0..<1000 where names.count < 4 {
            let name = "room-\(index)"
            if groups.insert(keys.channel(ChannelKey(type: .message, name: Name(unchecked: name))).groupNumber).inserted { names.append(name) }
        }
        #expect(names.count == 4)
        return names
    }

    private func carries(_ event: JSON, _ user: String, in channel: String) -> Bool {
        event.string("channel") == channel && event.string("type") == "interval"
            && (event["interval"]?["join"]?.arrayValue ?? []).contains { $0.stringValue == user }
    }

    @Test("joins through a node stopped before its flush timers fired reach the watchers in interval events flushed by the other node")
    func aStoppedNodesFlushesInEveryGroup() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(intervalMode: true), prefix: "kgflush:")
        let rooms = try channelsInDistinctGroups(bed)
        let watcher = try bed.login("watcher", on: 0)
        let member = try bed.login("member", on: 0)
        for room in rooms {
            #expect(try bed.request(watcher, "join", ["channel": .string(room)])["ok"]?.boolValue == true)
            #expect(try bed.request(member, "join", ["channel": .string(room)])["ok"]?.boolValue == true)
        }
        try bed.pump(until: { rooms.allSatisfy { room in watcher.events.contains { carries($0, "member", in: room) } } },
                     what: "every channel in interval mode, with every change so far sent")

        let joiner = try bed.login("joiner", on: 1)
        for room in rooms { #expect(try bed.request(joiner, "join", ["channel": .string(room)])["ok"]?.boolValue == true) }
        bed.stop(node: 1)
        try bed.pump(until: { rooms.allSatisfy { room in watcher.events.contains { carries($0, "joiner", in: room) } } },
                     timeout: 3, what: "an interval event with the stopped node's join in every channel")
    }

    @Test("state keys whose node lost its expiry timers are expired by another node, in every group")
    func anotherNodeExpiresInEveryGroup() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(intervalMode: false), prefix: "kgttl:")
        let rooms = try channelsInDistinctGroups(bed)
        let watcher = try bed.login("watcher", on: 0)
        let typist = try bed.login("typist", on: 1)
        for room in rooms {
            #expect(try bed.request(watcher, "join", ["channel": .string(room)])["ok"]?.boolValue == true)
            #expect(try bed.request(typist, "join", ["channel": .string(room)])["ok"]?.boolValue == true)
        }
        // Node 1 stays alive (no hold, no reap) but never expires anything itself: its timers
        // are gone and its reaper's reads of the due buckets never reach Redis.
        bed.dropsStoreCall = { node, commands in
            node == 1 && commands.contains { if case .script(let script, _) = $0 { script.name == "presence.overdueExpiries" } else { false } }
        }
        var expiriesByNode0 = 0
        bed.afterStoreReply = { node, commands, _ in
            for case .script(let script, _) in commands where script.name == "presence.setState" && node == 0 { expiriesByNode0 += 1 }
        }
        for room in rooms {
            let set = try bed.request(typist, "setState", ["channel": .string(room), "state": .object(JSONObject([("typing", .string("1"))])), "ttlSeconds": .number(JSONNumber(0.2))])
            #expect(set["ok"]?.boolValue == true, "\(set.compactString)")
        }
        try presence(bed, 1).expiries = TimerQueue()
        let cleared: (JSON, String) -> Bool = { event, room in
            event.string("channel") == room && event.string("publisher") == "typist" && event.string("type") == "stateChanged"
                && event["state"]?["typing"] == nil
        }
        try bed.pump(until: { rooms.allSatisfy { room in watcher.events.contains { cleared($0, room) } } },
                     timeout: 5, what: "the typing key expired in every channel by node 0")
        #expect(expiriesByNode0 >= rooms.count, "node 0 ran the expiries (the watcher changes no state)")
    }
}
