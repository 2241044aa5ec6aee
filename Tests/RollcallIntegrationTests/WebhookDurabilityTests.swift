import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// PROTOCOL §11 *(1.2)* "Nothing lost", issue 29 item 11: webhook events wait in durable
/// storage until a 2xx acknowledges them. One node: in `storage.path`, so a `kill -9` with
/// events not posted loses none (the broker started again on the file posts them, with the
/// same ids). A cluster: in Redis, so a node killed with a batch it could not post has it posted
/// by another node (same batch and event ids), and events not posted survive `kill -9` of every
/// node and a Redis restart (append-only file).
@Suite("Webhooks: nothing lost", .serialized)
struct WebhookDurabilityTests {
    static let secret = "durable-webhook-secret"

    private func webhooks(_ receiver: WebhookReceiver, events: [String] = ["presence", "channel"]) -> [String: Any] {
        ["url": receiver.url, "secret": Self.secret, "batchMaxDelaySeconds": 0.05, "timeoutSeconds": 2, "events": events]
    }

    private func ids(_ requests: [WebhookReceiver.Request]) -> Set<String> {
        Set(requests.flatMap(\.events).compactMap { $0["id"]?.stringValue })
    }

    private func summary(_ events: [JSON]) -> Set<String> {
        Set(events.map { event in
            "\(event["event"]?.stringValue ?? "?") \(event["type"]?.stringValue ?? "?") \(event["channel"]?.stringValue ?? "") "
                + "\(event["publisher"]?.stringValue ?? "") \(event["seq"]?.numberValue?.intValue ?? -1)"
        })
    }

    @Test("one node, kill -9 with events not posted: the broker started again on the same storage.path posts them, same ids")
    func oneNodeKilledPostsItsEventsAfterTheRestart() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        receiver.answer { _ in .status(500) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-webhooks-\(UUID().uuidString).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let config: [String: Any] = ["storage": ["path": path], "webhooks": webhooks(receiver)]
        let first = try BrokerProcess(config: config)
        let alice = try first.session("alice")
        #expect(try alice.join("room").ok)
        let bob = try first.session("bob")
        #expect(try bob.join("room").ok)
        // One batch in flight at a time: the first is tried again and again, the rest wait.
        #expect(receiver.wait { requests in requests.count >= 2 }, "a batch was tried and retried")
        let tried = ids(receiver.requests)
        first.kill()

        receiver.answer { _ in .status(200) }
        let second = try BrokerProcess(config: config)
        defer { second.kill() }
        let expected: Set<String> = ["channel occupied room  1", "presence join room alice 1", "presence join room bob 2"]
        #expect(receiver.wait(timeout: 15) { requests in
            let posted = requests.filter(\.answeredOK)
            return self.ids(posted).isSuperset(of: tried) && self.summary(posted.flatMap(\.events)).isSuperset(of: expected)
        }, "posted after the restart: \(summary(receiver.acknowledged.flatMap(\.events))), tried before: \(tried)")
        // Acknowledged events are gone from the file: a third start posts nothing again (once
        // the broker has read the 2xx: the receiver counts the batch as soon as it answered).
        #expect(eventually(timeout: 10) { ((try? second.metric("rollcall_webhook_events_delivered_total")) ?? 0) >= 3 })
        let before = receiver.acknowledged.count
        second.kill()
        let third = try BrokerProcess(config: config)
        defer { third.kill() }
        let probe = try third.session("carol")
        #expect(try probe.join("probe").ok)
        #expect(receiver.wait { requests in requests.filter(\.answeredOK).flatMap(\.events).contains { $0["channel"]?.stringValue == "probe" } })
        let again = receiver.acknowledged.dropFirst(before).flatMap(\.events).compactMap { $0["id"]?.stringValue }
        #expect(Set(again).isDisjoint(with: tried), "settled events are not posted again")
    }

    @Test("cluster: a node killed with a batch it could not post: another node posts it, same batch id and event ids")
    func aKilledNodesBatchIsPostedByAnotherNode() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        receiver.answer { _ in .status(500) }
        let cluster = try ClusterProcess(config: ["webhooks": webhooks(receiver)])
        defer { cluster.stopAll() }
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("room").ok)
        #expect(receiver.wait { requests in self.ids(requests).count >= 2 }, "occupied and join were tried")
        let first = try #require(receiver.requests.first)
        let sender = try #require(first.json["node"]?.stringValue)
        let senderIndex = try #require(cluster.nodeIds.firstIndex(of: sender))
        let tried = first.events.compactMap { $0["id"]?.stringValue }
        cluster.kill(node: senderIndex)

        receiver.answer { _ in .status(200) }
        #expect(receiver.wait(timeout: 20) { requests in requests.contains { $0.answeredOK && $0.batchId == first.batchId } },
                "\(receiver.requests.map { "\($0.json["node"]?.stringValue ?? "?") \($0.batchId) \($0.answeredOK)" })")
        let posted = try #require(receiver.acknowledged.first { $0.batchId == first.batchId })
        #expect(posted.json["node"]?.stringValue != sender, "posted by a live node")
        #expect(posted.events.compactMap { $0["id"]?.stringValue } == tried, "the same events, with the same ids")
        #expect(summary(posted.events) == ["channel occupied room  1", "presence join room alice 1"])
    }

    @Test("cluster: events not posted survive kill -9 of every node and a Redis restart (append-only file)")
    func eventsSurviveEveryNodeAndARedisRestart() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        receiver.answer { _ in .status(503) }
        let redis = try RedisServer(appendOnly: true)
        let cluster = try ClusterProcess(config: ["webhooks": webhooks(receiver, events: ["presence", "channel", "userStatus"])], redis: redis)
        defer { cluster.stopAll() }
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("room").ok)
        let bob = try cluster.session("bob", node: 1)
        #expect(try bob.join("room").ok)
        #expect(try bob.request("setCustomStatus", ["customStatus": "away"]).ok)
        #expect(receiver.wait { !$0.isEmpty })
        for node in 0..<3 { cluster.kill(node: node) }
        _ = try? RedisWire.command(port: cluster.redisPort, ["SHUTDOWN"])
        try redis.startAgainAfterShutdown()

        receiver.answer { _ in .status(200) }
        try cluster.restart(node: 2)
        let expected: Set<String> = ["channel occupied room  1", "presence join room alice 1", "presence join room bob 2"]
        #expect(receiver.wait(timeout: 20) { requests in
            self.summary(requests.filter(\.answeredOK).flatMap(\.events)).isSuperset(of: expected)
        }, "\(summary(receiver.acknowledged.flatMap(\.events)))")
        let statuses = receiver.acknowledged.flatMap(\.events).filter { $0["event"]?.stringValue == "userStatus" }
        let bobs = statuses.filter { $0["status"]?["userId"]?.stringValue == "bob" }.compactMap { $0["version"]?.numberValue?.intValue }
        #expect(Set(bobs) == [1, 2], "bob online (version 1), then away (version 2): \(bobs)")
        #expect(receiver.wait(timeout: 10) { requests in self.ids(requests).isSubset(of: self.ids(requests.filter(\.answeredOK))) },
                "every event tried before the restart is posted, with its id")
    }
}
