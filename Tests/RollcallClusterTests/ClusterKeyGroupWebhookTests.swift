import Foundation
@testable import RollcallCore
import RollcallProtocol
import RollcallRedis
@testable import RollcallRedisEngine
import Testing

/// Issue 30, step 3: a channel script writes its webhook events into its key group's stream
/// (`P{<g>}wh`); a node's ``WebhookStream`` takes from the streams its scripts wrote to, from
/// those known to hold events, and, every `claimIdleMs`, from whatever a sweep of every group
/// finds (events another node wrote, or took and left). Laid out as on Redis Cluster (16
/// groups). No hold, resume or reap here (their scripts still assume one group): the taker that
/// stops is a stream whose node stays up.
@Suite("Cluster: webhook events of every key group's stream are delivered once")
struct ClusterKeyGroupWebhookTests {
    private func configuration() -> Configuration {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = 16
        configuration.webhooks.url = "http://127.0.0.1:9/hooks"
        configuration.webhooks.secret = "s"
        configuration.webhooks.events = ["presence", "channel"]
        configuration.webhooks.batchMaxDelaySeconds = 0
        configuration.webhooks.batchMaxEvents = 4
        return configuration
    }

    private func stream(_ bed: ClusterBed, _ node: Int) -> WebhookStream {
        WebhookStream(link: bed.links[node], webhooks: bed.brokers[node].configuration.webhooks)
    }

    private func turn(_ bed: ClusterBed, _ stream: WebhookStream) throws -> WebhookStream.Turn {
        var turn: Result<WebhookStream.Turn, RedisError>?
        stream.take { turn = $0 }
        try bed.pump(until: { turn != nil }, what: "a turn at the streams")
        return try #require(try turn?.get())
    }

    private func settle(_ bed: ClusterBed, _ stream: WebhookStream, _ events: [WebhookStream.Event]) throws {
        var settled: Result<Void, RedisError>?
        stream.settle(events.map(\.id)) { settled = $0 }
        try bed.pump(until: { settled != nil }, what: "settled")
        try settled?.get()
    }

    private func line(_ event: WebhookStream.Event) -> String {
        let json = (try? JSONParser.parse(event.bytes)) ?? .null
        return "\(json.string("channel") ?? "?") \(json.string("event") ?? "?") \(json.string("type") ?? "") \(json.string("publisher") ?? "")"
    }

    /// Six channel names over at least four groups, some not group 0.
    private func rooms(_ bed: ClusterBed) throws -> [String] {
        let keys = try #require(bed.brokers[0].engines.presence as? ClusterPresence).keys
        let names = (0..<6).map { "hall-\($0)" }
        let groups = Set(names.map { keys.channel(ChannelKey(type: .message, name: Name(unchecked: $0))).groupNumber })
        #expect(groups.count >= 4 && groups != [0], "\(groups)")
        return names
    }

    @Test("a link marks the group of every webhook stream a script declares; a mark lasts holdMs")
    func marksLastTheirHold() {
        let marks = WebhookStreamGroups(prefix: "kgmarks:")
        let keys = ["kgmarks:{3}c:m:1:a", "kgmarks:{3}wh", "kgmarks:{12}wh", "other:{5}wh", "kgmarks:{x}wh", "kgmarks:{}wh", "kgmarks:wh"]
        marks.markStreams(among: keys.map { Array($0.utf8) }[...], now: 1000)
        #expect(marks.recent(now: 1000) == [3, 12], "only this prefix's group streams")
        marks.mark(7, now: 2000)
        #expect(marks.recent(now: 1000 + WebhookStreamGroups.holdMs) == [3, 7, 12])
        #expect(marks.recent(now: 2000 + WebhookStreamGroups.holdMs) == [7], "the older marks are forgotten")
        #expect(marks.recent(now: 2001 + WebhookStreamGroups.holdMs).isEmpty)
    }

    @Test("events of channels in many groups, written through two nodes, are all taken by one node once, in batches of batchMaxEvents")
    func everyGroupsEventsOnce() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(), prefix: "kgwh:")
        let rooms = try rooms(bed)
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        for room in rooms.prefix(3) { #expect(try bed.request(alice, "join", ["channel": .string(room)])["ok"]?.boolValue == true) }
        for room in rooms.suffix(3) { #expect(try bed.request(bob, "join", ["channel": .string(room)])["ok"]?.boolValue == true) }
        let expected = rooms.prefix(3).flatMap { ["\($0) channel occupied ", "\($0) presence join alice"] }
            + rooms.suffix(3).flatMap { ["\($0) channel occupied ", "\($0) presence join bob"] }

        let taker = stream(bed, 0)
        var taken: [WebhookStream.Event] = []
        for _ in 0..<10 where taken.count < expected.count {
            let batch = try turn(bed, taker)
            #expect(batch.events.count <= 4, "batchMaxEvents")
            try settle(bed, taker, batch.events)
            taken += batch.events
        }
        #expect(taken.map(line).sorted() == expected.sorted())
        #expect(Set(taken.map(\.id)).count == taken.count, "one id per event: \(taken.map(\.id))")
        #expect(taken.contains { $0.id.dropFirst("kgwh:".count).split(separator: "-").count == 3 },
                "events of groups other than 0 name their group")
        let after = try turn(bed, taker)
        #expect(after.events.isEmpty && after.inStream == 0, "settled events are gone from every stream")
    }

    @Test("a batch a taker left pending (it stopped) is taken over by another node's sweep, same ids, each event once")
    func aLeftBatchIsTakenOver() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(), prefix: "kgwhleft:")
        let rooms = try rooms(bed)
        let bob = try bed.login("bob", on: 1)
        for room in rooms { #expect(try bed.request(bob, "join", ["channel": .string(room)])["ok"]?.boolValue == true) }
        let left = try turn(bed, stream(bed, 1)).events
        #expect(left.count == 4, "node 1's taker takes one batch, then stops")

        let taker = stream(bed, 0)
        var taken: [WebhookStream.Event] = []
        let deadline = Date().addingTimeInterval(Double(taker.claimIdleMs) / 1000 + 5)
        while taken.count < 2 * rooms.count, Date() < deadline {
            let batch = try turn(bed, taker)
            try settle(bed, taker, batch.events)
            taken += batch.events
            if batch.events.isEmpty {
                let until = Date().addingTimeInterval(0.1)
                try bed.pump(until: { Date() >= until }, what: "a poll")
            }
        }
        #expect(taken.count == 2 * rooms.count, "\(taken.map(line))")
        #expect(Set(taken.map(\.id)).count == taken.count, "each event once")
        #expect(Set(left.map(\.id)).isSubset(of: Set(taken.map(\.id))), "the left batch, same ids")
        #expect(try turn(bed, taker).inStream == 0)
    }
}
