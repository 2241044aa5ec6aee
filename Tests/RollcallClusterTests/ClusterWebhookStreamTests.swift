import Foundation
@testable import RollcallCore
import RollcallProtocol
import RollcallRedis
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 11: in cluster mode the scripts that make a change write its webhook events
/// into their key group's Redis stream `P{<g>}wh` themselves (PROTOCOL §11 *(1.2)* "Nothing lost"), so an event
/// exists even when the node never hears the script's answer; every node takes them through
/// ``WebhookStream``. Channel events carry the `seq` of the presence event that occupied or
/// vacated the channel, user-status events the version of the user's record.
@Suite("Cluster: webhook events are written by the script that makes the change")
struct ClusterWebhookStreamTests {
    private func configuration(events: [String] = ["presence", "channel", "userStatus"]) -> Configuration {
        var configuration = Configuration()
        configuration.webhooks.url = "http://127.0.0.1:9/hooks"
        configuration.webhooks.secret = "s"
        configuration.webhooks.events = events
        configuration.webhooks.batchMaxDelaySeconds = 0
        configuration.webhooks.batchMaxEvents = 1000
        return configuration
    }

    /// Every event the stream holds, as node `node` takes them (and settles them).
    private func take(_ bed: ClusterBed, node: Int) throws -> [JSON] {
        let stream = WebhookStream(link: bed.links[node], webhooks: bed.brokers[node].configuration.webhooks)
        let events = try turn(bed, stream).events
        var settled = false
        stream.settle(events.map(\.id)) { _ in settled = true }
        try bed.pump(until: { settled }, what: "settled")
        return events.map { (try? JSONParser.parse($0.bytes)) ?? .null }
    }

    /// One turn of `stream` at the stream, without settling.
    private func turn(_ bed: ClusterBed, _ stream: WebhookStream) throws -> WebhookStream.Turn {
        var turn: Result<WebhookStream.Turn, RedisError>?
        stream.take { turn = $0 }
        try bed.pump(until: { turn != nil }, what: "a turn at the stream")
        return try #require(try turn?.get())
    }

    /// Runs the loop for `seconds` (the nodes keep beating meanwhile).
    private func wait(_ bed: ClusterBed, seconds: TimeInterval) throws {
        let until = Date().addingTimeInterval(seconds)
        try bed.pump(until: { Date() >= until }, timeout: seconds + 5, what: "\(seconds) s")
    }

    private func line(_ event: JSON) -> String {
        "\(event.string("event") ?? "?") \(event.string("type") ?? "") \(event.string("publisher") ?? "") \(event["seq"]?.numberValue?.intValue ?? -1)"
    }

    @Test("a join whose script ran but whose answer was lost still has its events in the stream, for any node to post")
    func aLostAnswerLosesNoEvent() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(events: ["presence", "channel"]), prefix: "whlost:")
        let alice = try bed.login("alice", on: 0)
        bed.failFirstCall(running: "presence.join", on: 0, answerLost: true)
        let joined = try bed.request(alice, "join", ["channel": .string("room")])
        #expect(joined["error"]?.string("code") == "UNAVAILABLE", "\(joined.compactString)")
        let events = try take(bed, node: 1)
        #expect(events.map(line) == ["channel occupied  1", "presence join alice 1"])
        #expect(events.first?.string("channel") == "room")
        #expect(events.first?.string("channelType") == "message")
        #expect(try take(bed, node: 1).isEmpty, "settled events are gone")
    }

    @Test("an interval flush that ran in Redis while its node lost the answer (Redis resuming from a pause) is in the stream, with the seq the clients got")
    func anIntervalFlushWithALostAnswerIsInTheStream() throws {
        // Issue 29 item 17: such `interval` events reached the clients but never the backend.
        var configuration = configuration(events: ["presence"])
        configuration.presence.maxInstantEvents = 2
        configuration.presence.hysteresis = 0
        configuration.presence.intervalSeconds = 0.3
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "whinterval:")
        let watcher = try bed.login("watcher", on: 1)
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        for index in 0..<3 {
            let member = try bed.login("member-\(index)", on: 0)
            #expect(try bed.request(member, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        }
        let carries: (JSON, String) -> Bool = { event, user in
            event.string("type") == "interval" && (event["interval"]?["join"]?.arrayValue ?? []).contains { $0.stringValue == user }
        }
        try bed.pump(until: { watcher.events.contains { carries($0, "member-2") } }, what: "the channel in interval mode")
        _ = try take(bed, node: 1)

        let joiner = try bed.login("joiner", on: 0)
        bed.failFirstCall(running: "presence.flush", on: 0, answerLost: true)
        #expect(try bed.request(joiner, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        try bed.pump(until: { watcher.events.contains { carries($0, "joiner") } }, what: "the interval event at the watcher")
        let seen = try #require(watcher.events.last { carries($0, "joiner") })
        let posted = try take(bed, node: 1).filter { carries($0, "joiner") }
        #expect(posted.count == 1, "once in the stream: \(posted.map(\.compactString))")
        #expect(seen["seq"]?.numberValue != nil && posted.first?["seq"] == seen["seq"], "the seq the clients got")
        #expect(posted.first?["interval"] == seen["interval"])
    }

    @Test("channel events carry the seq of the presence event that occupied or vacated the channel")
    func channelEventsCarryTheirSeq() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(events: ["presence", "channel"]), prefix: "whseq:")
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        for client in [alice, bob] { #expect(try bed.request(client, "join", ["channel": .string("room")])["ok"]?.boolValue == true) }
        for client in [alice, bob] { #expect(try bed.request(client, "leave", ["channel": .string("room")])["ok"]?.boolValue == true) }
        #expect(try bed.request(bob, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try take(bed, node: 0).map(line) == [
            "channel occupied  1", "presence join alice 1", "presence join bob 2", "presence leave alice 3",
            "presence leave bob 4", "channel vacated  4", "channel occupied  1", "presence join bob 1",
        ])
    }

    @Test("userStatus events carry the record's version, one step per change, whichever node made it")
    func userStatusEventsCarryTheVersion() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(events: ["userStatus"]), prefix: "whversion:")
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "setCustomStatus", ["customStatus": .string("busy")])["ok"]?.boolValue == true)
        let second = try bed.login("alice", on: 1, ["platform": .string("ios")])
        #expect(try bed.request(second, "setCustomStatus", ["customStatus": .string("busy")])["ok"]?.boolValue == true)
        #expect(try bed.request(second, "logout")["ok"]?.boolValue == true)
        let events = try take(bed, node: 1)
        #expect(events.map { $0["version"]?.numberValue?.intValue ?? 0 } == [1, 2, 3, 4])
        #expect(events.map { $0["status"]?.string("customStatus") ?? "-" } == ["-", "busy", "busy", "busy"])
        #expect(events.allSatisfy { $0.objectValue?.members.map(\.key) == ["event", "version", "status"] })
    }

    @Test("a turn before any event writes no key under the prefix (a register after a data loss would call it foreign)")
    func aTurnWithoutAStreamWritesNothing() throws {
        let bed = try ClusterBed(nodes: 1, configuration: configuration(), prefix: "whnone:")
        let stream = WebhookStream(link: bed.links[0], webhooks: bed.brokers[0].configuration.webhooks)
        #expect(try turn(bed, stream) == WebhookStream.Turn(events: [], dropped: 0, nextDueMs: nil))
        #expect(try bed.redis.command(["EXISTS", "whnone:{0}wh"]) == ":0")
    }

    @Test("the stream keeps at most queueMaxEvents events: the oldest go, and the next turn reports how many")
    func theStreamIsBoundedAndCountsItsDrops() throws {
        var configuration = configuration(events: ["presence", "channel"])
        configuration.webhooks.queueMaxEvents = 3
        let bed = try ClusterBed(nodes: 1, configuration: configuration, prefix: "whbound:")
        let alice = try bed.login("alice", on: 0)
        for channel in ["a", "b", "c"] { #expect(try bed.request(alice, "join", ["channel": .string(channel)])["ok"]?.boolValue == true) }
        let stream = WebhookStream(link: bed.links[0], webhooks: configuration.webhooks)
        let first = try turn(bed, stream)
        #expect(first.dropped == 3, "six events written, three kept")
        #expect(first.inStream == 3, "the stream's length: the cluster's backlog, as /metrics shows it")
        #expect(first.events.compactMap { (try? JSONParser.parse($0.bytes))?.string("channel") } == ["b", "c", "c"])
        #expect(try turn(bed, stream).dropped == 0, "each drop is reported once")
    }

    @Test("a batch its node stopped touching is taken over, same ids; one its node keeps touching is not")
    func aBatchIsTakenOverOnlyFromANodeThatStoppedTouchingIt() throws {
        let bed = try ClusterBed(nodes: 2, configuration: configuration(events: ["channel"]), prefix: "whclaim:")
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "join", ["channel": .string("kept")])["ok"]?.boolValue == true)
        let first = WebhookStream(link: bed.links[0], webhooks: bed.brokers[0].configuration.webhooks)
        let second = WebhookStream(link: bed.links[1], webhooks: bed.brokers[1].configuration.webhooks)
        let held = try turn(bed, first).events
        #expect(held.count == 1)
        // The first node is alive and retrying: it touches its batch more often than claimIdleMs.
        let touches = Int(first.claimIdleMs / 500) + 2
        var inStream: Int?
        for _ in 0..<touches {
            first.touch(held.map(\.id)) { inStream = $0 }
            try wait(bed, seconds: 0.5)
        }
        #expect(inStream == 1, "a touch answers the stream's length")
        #expect(try turn(bed, second).events.isEmpty, "a batch its node keeps touching stays its node's")
        // It stops (killed): after claimIdleMs the other node takes the same events over.
        try wait(bed, seconds: Double(first.claimIdleMs) / 1000 + 0.2)
        #expect(try turn(bed, second).events == held)
    }
}

