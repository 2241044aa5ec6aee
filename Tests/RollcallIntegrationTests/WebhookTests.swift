import Crypto
import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Webhooks against the real broker and a real HTTP receiver in this process (PROTOCOL §11):
/// signatures, batching by count and by delay, order, channel and user-status events, the
/// `events` filter, retries (500, a hang, nobody listening) with the same batch id, drops after
/// `retryMaxSeconds` and on queue overflow (counted in `/metrics`), the shutdown drain, and a
/// backend roster rebuilt from presence webhooks that matches the broker after churn.
@Suite struct WebhookTests {
    static let secret = "webhook-test-secret"

    /// A broker posting to `url` with `webhooks` overriding the test defaults.
    private func broker(url: String, _ webhooks: [String: Any] = [:], _ more: [String: Any] = [:]) throws -> BrokerProcess {
        var section: [String: Any] = ["url": url, "secret": Self.secret, "batchMaxDelaySeconds": 0.05, "timeoutSeconds": 2]
        section.merge(webhooks) { $1 }
        var config = more
        config["webhooks"] = section
        return try BrokerProcess(config: config)
    }

    /// Checks the `Rollcall-Signature` header with HMACs computed here: one `v1` per secret of
    /// `secrets`, in that order (the broker's `secret`, then `webhooks.secrets`); returns its `t`.
    @discardableResult
    private func verifySignature(_ request: WebhookReceiver.Request, secrets: [String] = [WebhookTests.secret]) -> Int64? {
        guard let header = request.headers["rollcall-signature"] else {
            Issue.record("no Rollcall-Signature header")
            return nil
        }
        let pairs = header.split(separator: ",").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        let times = pairs.filter { $0.count == 2 && $0[0] == "t" }.map { $0[1] }
        let signatures = pairs.filter { $0.count == 2 && $0[0] == "v1" }.map { $0[1] }
        guard times.count == 1, let t = times.first, let sentAt = Int64(t), pairs.count == 1 + signatures.count else {
            Issue.record("malformed signature header \(header)")
            return nil
        }
        let expected = secrets.map { secret in
            var hmac = HMAC<SHA256>(key: SymmetricKey(data: Array(secret.utf8)))
            hmac.update(data: Array("\(t).".utf8) + request.body)
            return hmac.finalize().map { String(format: "%02x", $0) }.joined()
        }
        #expect(signatures == expected, "signature mismatch: \(header)")
        #expect(request.json["sentAt"]?.numberValue?.intValue == Int(sentAt))
        return sentAt
    }

    /// All events of the acknowledged batches, in arrival order.
    private func deliveredEvents(_ receiver: WebhookReceiver) -> [JSON] {
        receiver.acknowledged.flatMap(\.events)
    }

    private func joinOrFail(_ connection: RollcallConnection, _ channel: String, presence: Bool? = nil,
                            state: [String: String]? = nil) throws {
        let reply = try connection.join(channel, presence: presence, state: state)
        guard reply.ok else { throw HarnessError("join \(channel) failed: \(reply)") }
    }

    // MARK: - Content

    @Test func batchesAreSignedAndCarryPresenceChannelAndStatusEventsInOrder() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url)
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room", presence: true)
        _ = try alice.presenceEvent("snapshot", channel: "room")
        let bob = try broker.session("bob")
        try joinOrFail(bob, "room", state: ["mood": "ok"])
        #expect(try bob.channelOp("setState", "room", ["state": ["mood": "busy"]]).ok)
        #expect(try bob.channelOp("leave", "room").ok)
        var seen: [Event] = []
        for type in ["join", "stateChanged", "leave"] { seen.append(try alice.presenceEvent(type, channel: "room")) }
        #expect(try alice.channelOp("leave", "room").ok)

        #expect(receiver.wait { requests in requests.flatMap(\.events).contains { $0["type"]?.stringValue == "vacated" } })
        for request in receiver.requests {
            #expect(request.method == "POST")
            #expect(request.path == "/hooks")
            #expect(request.headers["content-type"] == "application/json")
            #expect(request.json["node"]?.stringValue == "standalone")
            #expect(!request.batchId.isEmpty)
            verifySignature(request)
        }
        let events = deliveredEvents(receiver)
        let ids = events.compactMap { $0["id"]?.stringValue }
        #expect(ids.count == events.count)
        #expect(Set(ids).count == ids.count, "event ids are unique")
        #expect(Set(receiver.requests.map(\.batchId)).count == receiver.requests.count)

        let kinds = events.map { event -> String in
            let name = event["event"]?.stringValue ?? "?"
            return name == "userStatus" ? "userStatus:\(event["status"]?["userId"]?.stringValue ?? "?")"
                : "\(name):\(event["type"]?.stringValue ?? "?")"
        }
        #expect(kinds == ["userStatus:alice", "channel:occupied", "presence:join", "userStatus:bob", "presence:join",
                          "presence:stateChanged", "presence:leave", "presence:leave", "channel:vacated"])
        let presence = events.filter { $0["event"]?.stringValue == "presence" }
        #expect(presence.map { $0["seq"]?.numberValue?.intValue ?? 0 } == [1, 2, 3, 4, 5])
        // Presence events are the clients' objects plus an id (first member), nothing else.
        for (webhook, client) in zip(presence[1...3], seen) {
            var members = webhook.objectValue?.members ?? []
            #expect(members.first?.key == "id")
            members.removeFirst()
            #expect(JSON.object(JSONObject(members)) == JSON.object(client.object))
            #expect(members.map(\.key) == client.object.members.map(\.key))
        }
        let status = try #require(events.first { $0["event"]?.stringValue == "userStatus" })
        #expect(status["status"]?["status"]?.stringValue == "online")
        #expect(status["status"]?["platforms"] == ["cli"])
        let occupied = try #require(events.first { $0["type"]?.stringValue == "occupied" })
        #expect(occupied["channel"]?.stringValue == "room")
        #expect(occupied["channelType"]?.stringValue == "message")
        #expect(occupied["timestamp"]?.numberValue?.intValue ?? 0 > 1_700_000_000_000)
        // (1.2) Channel events carry the seq of the presence event that occupied or vacated the
        // channel; user-status events the version of the user's record.
        #expect(occupied["seq"]?.numberValue?.intValue == 1)
        let vacated = try #require(events.last { $0["type"]?.stringValue == "vacated" })
        #expect(vacated["seq"]?.numberValue?.intValue == 5)
        #expect(status.objectValue?.members.map(\.key) == ["id", "event", "version", "status"])
        #expect(status["version"]?.numberValue?.intValue == 1)
    }

    /// `webhooks.secrets` (PROTOCOL §11, 1.2): each batch carries one `v1` per secret, the
    /// secret's first, so a receiver that knows only the old or only the new secret accepts it.
    @Test func batchesAreSignedWithTheSecretAndEachOfSecrets() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["secrets": ["old-secret-1", "old-secret-2"], "events": ["channel"]])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        #expect(receiver.wait { !$0.isEmpty })
        let request = try #require(receiver.requests.first)
        verifySignature(request, secrets: [Self.secret, "old-secret-1", "old-secret-2"])
        #expect(request.headers["rollcall-signature"]?.components(separatedBy: ",v1=").count == 4)
    }

    @Test func theEventsFilterSendsOnlyTheKindsAskedFor() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["events": ["userStatus"]])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        #expect(try alice.request("setCustomStatus", ["customStatus": "away"]).ok)
        #expect(receiver.wait { $0.flatMap(\.events).contains { $0["status"]?["customStatus"]?.stringValue == "away" } })
        #expect(deliveredEvents(receiver).allSatisfy { $0["event"]?.stringValue == "userStatus" })
        #expect(deliveredEvents(receiver).count == 2)
    }

    // MARK: - Batching

    @Test func aBatchGoesOutWhenItHoldsBatchMaxEvents() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["events": ["channel"], "batchMaxEvents": 5, "batchMaxDelaySeconds": 60])
        let alice = try broker.session("alice")
        for index in 0..<10 { try joinOrFail(alice, "room-\(index)") }
        #expect(receiver.wait(timeout: 20) { $0.count >= 2 })
        #expect(receiver.requests.map(\.events.count) == [5, 5])
        let channels = receiver.requests.flatMap(\.events).map { $0["channel"]?.stringValue ?? "?" }
        #expect(channels == (0..<10).map { "room-\($0)" })
    }

    @Test func aBatchGoesOutWhenItsOldestEventIsBatchMaxDelayOld() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["events": ["channel"], "batchMaxEvents": 100, "batchMaxDelaySeconds": 1])
        let alice = try broker.session("alice")
        let started = Date()
        for index in 0..<3 { try joinOrFail(alice, "room-\(index)") }
        #expect(receiver.wait { $0.count >= 1 })
        let first = try #require(receiver.requests.first)
        #expect(first.receivedAt.timeIntervalSince(started) >= 0.9)
        #expect(first.events.count == 3)
    }

    @Test func aLargeBatchArrivesWholeAndSigned() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["events": ["presence"], "batchMaxEvents": 40, "batchMaxDelaySeconds": 60])
        let big = String(repeating: "x", count: 4000)
        var sessions: [RollcallConnection] = []
        for index in 0..<40 {
            let session = try broker.session("big-\(index)")
            try joinOrFail(session, "room", state: ["blob": big])
            sessions.append(session)
        }
        #expect(receiver.wait(timeout: 20) { !$0.isEmpty })
        let request = try #require(receiver.requests.first)
        #expect(request.body.count > 160_000, "several 16 KiB chunks")
        #expect(request.events.count == 40)
        #expect(request.events.allSatisfy { $0["state"]?["blob"]?.stringValue == big })
        verifySignature(request)
    }

    // MARK: - Retries and drops

    @Test func aBatchAnswered500IsRetriedWithTheSameIdAndANewSignature() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        var answered = 0
        let lock = NSLock()
        receiver.answer { _ in
            lock.withLock {
                answered += 1
                return answered <= 2 ? .status(500) : .status(200)
            }
        }
        let broker = try broker(url: receiver.url, ["events": ["channel"]])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        #expect(receiver.wait(timeout: 20) { $0.count >= 3 })
        let attempts = Array(receiver.requests.prefix(3))
        #expect(Set(attempts.map(\.batchId)).count == 1)
        #expect(attempts.allSatisfy { $0.events == attempts[0].events })
        let stamps = attempts.compactMap { verifySignature($0) }
        #expect(Set(stamps).count == 3, "each attempt is signed anew")
        #expect(attempts[1].receivedAt.timeIntervalSince(attempts[0].receivedAt) >= 0.4)
        #expect(attempts[2].receivedAt.timeIntervalSince(attempts[1].receivedAt) >= 0.9)
        #expect(try eventually { try broker.metric("rollcall_webhook_attempts_failed_total") == 2 })
        #expect(try broker.metric("rollcall_webhook_events_delivered_total") == 1)
    }

    @Test func aReceiverThatHangsIsGivenUpAfterTimeoutSecondsAndRetried() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        var calls = 0
        let lock = NSLock()
        receiver.answer { _ in lock.withLock { calls += 1; return calls == 1 ? .hang : .status(200) } }
        let broker = try broker(url: receiver.url, ["events": ["channel"], "timeoutSeconds": 1])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        #expect(receiver.wait(timeout: 20) { $0.count >= 2 })
        let requests = receiver.requests
        #expect(requests[0].batchId == requests[1].batchId)
        #expect(requests[1].receivedAt.timeIntervalSince(requests[0].receivedAt) >= 1.4)
        #expect(try eventually { try broker.metric("rollcall_webhook_batches_delivered_total") == 1 })
        // The broker kept serving while the receiver hung.
        #expect(try alice.request("ping").ok)
    }

    @Test func batchesWaitForAReceiverThatIsNotListeningYet() throws {
        let port = try WebhookReceiver.freePort()
        let broker = try broker(url: "http://127.0.0.1:\(port)/hooks", ["events": ["channel"]])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        #expect(try eventually(timeout: 15) { (try broker.metric("rollcall_webhook_attempts_failed_total") ?? 0) >= 2 })
        let receiver = try WebhookReceiver(port: port)
        defer { receiver.stop() }
        #expect(receiver.wait(timeout: 20) { !$0.isEmpty })
        let request = try #require(receiver.requests.first)
        #expect(request.events.map { $0["type"]?.stringValue } == ["occupied"])
        verifySignature(request)
    }

    @Test func aBatchIsDroppedAfterRetryMaxSecondsAndCounted() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        receiver.answer { _ in .status(503) }
        let broker = try broker(url: receiver.url, ["events": ["channel"], "retryMaxSeconds": 1])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "first")
        #expect(try eventually(timeout: 15) {
            try broker.metric(#"rollcall_webhook_events_dropped_total{reason="retriesExhausted"}"#) == 1
        })
        // Attempts at 0 s and 0.5 s; a third would start at 1.5 s, past retryMaxSeconds.
        #expect(receiver.requests.count == 2)
        #expect(eventually(timeout: 5) { broker.stderrText.contains("webhook events dropped") }, "drops are logged (the line may reach the pipe after the metric)")
        receiver.answer { _ in .status(200) }
        try joinOrFail(alice, "second")
        #expect(receiver.wait(timeout: 15) { $0.contains { $0.answeredOK } })
        let delivered = try #require(receiver.acknowledged.first)
        #expect(delivered.batchId != receiver.requests[0].batchId)
        #expect(delivered.events.map { $0["channel"]?.stringValue } == ["second"])
    }

    @Test func eventsBeyondQueueMaxEventsAreDroppedOldestFirstAndCounted() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let gate = NSCondition()
        var open = false
        receiver.answer { _ in
            gate.lock()
            while !open { gate.wait() }
            gate.unlock()
            return .status(200)
        }
        let broker = try broker(url: receiver.url, ["events": ["channel"], "batchMaxEvents": 1, "queueMaxEvents": 2,
                                                    "timeoutSeconds": 30])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room-0")
        // room-0's batch is in flight (the receiver holds it); the next five wait or overflow.
        #expect(try eventually(timeout: 10) { try broker.metric("rollcall_webhook_events_queued_total") == 1 })
        for index in 1...5 { try joinOrFail(alice, "room-\(index)") }
        #expect(try eventually(timeout: 10) { try broker.metric(#"rollcall_webhook_events_dropped_total{reason="overflow"}"#) == 3 })
        #expect(try broker.metric("rollcall_webhook_queue_events") == 2)
        #expect(eventually(timeout: 5) { broker.stderrText.contains("webhook events dropped") }, "overflow drops are logged (the line may reach the pipe after the metric)")
        gate.withLock { open = true; gate.broadcast() }
        #expect(receiver.wait(timeout: 15) { $0.count >= 3 })
        #expect(receiver.requests.flatMap(\.events).map { $0["channel"]?.stringValue ?? "?" } == ["room-0", "room-4", "room-5"])
    }

    // MARK: - Start checks

    @Test(arguments: [
        (["url": "http://127.0.0.1:9/hooks", "secretEnv": "ROLLCALL_TEST_UNSET_VARIABLE"], "webhooks.secret"),
        (["url": "ftp://127.0.0.1/hooks", "secret": "s"], "webhooks.url"),
        (["url": "http://127.0.0.1:9/hooks", "secret": "s", "events": ["presence", "typing"]], "webhooks.events"),
    ] as [([String: any Sendable], String)])
    func aBadWebhooksSectionStopsTheBrokerNamingTheKey(section: [String: any Sendable], key: String) throws {
        let error = #expect(throws: HarnessError.self) {
            _ = try BrokerProcess(config: ["webhooks": section], startTimeout: 5)
        }
        #expect(error?.description.contains(key) == true, "\(String(describing: error))")
    }

    // MARK: - Shutdown

    @Test func sigtermSendsWaitingBatchesBeforeExiting() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["batchMaxDelaySeconds": 60])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        let exit = try #require(broker.stop(timeout: 10))
        #expect(!exit.signaled && exit.status == 0)
        #expect(exit.seconds < 5)
        let kinds = receiver.acknowledged.flatMap(\.events).map {
            "\($0["event"]?.stringValue ?? "?"):\($0["type"]?.stringValue ?? $0["status"]?["status"]?.stringValue ?? "?")"
        }
        #expect(kinds == ["userStatus:online", "channel:occupied", "presence:join", "channel:vacated", "userStatus:offline"])
    }

    @Test func sigtermGivesAReceiverThatHangsFiveSecondsThenExits() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        receiver.answer { _ in .hang }
        let broker = try broker(url: receiver.url, ["events": ["channel"], "timeoutSeconds": 30])
        let alice = try broker.session("alice")
        try joinOrFail(alice, "room")
        #expect(receiver.wait(timeout: 10) { !$0.isEmpty }, "the batch is in flight")
        let stoppedAt = Date()
        broker.process.send(SIGTERM)
        // While it drains (PROTOCOL §1 1.2): not ready, shutting down; still live.
        #expect(eventually(timeout: 3) { (try? RawHTTP.get(port: broker.port, path: "/readyz").bodyText) == "shutting down\n" })
        #expect(try RawHTTP.get(port: broker.port, path: "/readyz").status == 503)
        #expect(try RawHTTP.get(port: broker.port, path: "/livez").status == 200)
        let exit = try #require(broker.stop(timeout: 10))
        let seconds = Date().timeIntervalSince(stoppedAt)
        #expect(!exit.signaled && exit.status == 0)
        #expect(seconds >= 4 && seconds < 6.5, "the 5 s grace, then exit: \(seconds) s")
    }

    // MARK: - A backend's roster

    /// A backend that starts from an empty channel (seq 0) and applies presence webhooks in
    /// order, checking that `seq` never skips, ends up with the broker's exact roster after
    /// random churn in announce and interval mode. (From a `getOnlineUsers` baseline: below.)
    @Test(arguments: [50, 3])
    func aBackendRebuildsTheRosterFromPresenceWebhooks(maxInstantEvents: Int) throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(
            url: receiver.url, ["events": ["presence", "channel"], "batchMaxEvents": 7],
            ["presence": ["maxInstantEvents": maxInstantEvents, "hysteresis": min(1, maxInstantEvents - 1),
                          "intervalSeconds": 0.2, "timeoutSeconds": 0.5]])
        var generator = SeededGenerator(seed: UInt64(maxInstantEvents))
        let users = (0..<8).map { "user-\($0)" }
        var connections: [String: RollcallConnection] = [:]
        for _ in 0..<80 {
            let user = users.randomElement(using: &generator)!
            if let connection = connections[user] {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: _ = try connection.channelOp("leave", "room"); connection.close(); connections[user] = nil
                case 1: connection.drop(); connections[user] = nil
                default:
                    let value = "v\(Int.random(in: 0..<5, using: &generator))"
                    _ = try connection.channelOp("setState", "room", ["state": ["k": .string(value)]])
                }
            } else {
                let connection = try broker.session(user)
                try joinOrFail(connection, "room", state: ["k": "v0"])
                connections[user] = connection
            }
        }
        // Two members for sure, so the comparison below is never between two empty rosters.
        for user in ["last-a", "last-b"] {
            let connection = try broker.session(user)
            try joinOrFail(connection, "room", state: ["k": user])
            connections[user] = connection
        }
        let observer = try broker.session("observer")
        var expected: [String: [String: String]] = [:]
        var roster: [String: [String: String]] = [:]
        let matched = eventually(timeout: 20) {
            guard let online = try? observer.onlineUsers("room") else { return false }
            expected = online
            roster = (try? Self.applyPresence(deliveredEvents(receiver))) ?? ["<seq gap>": [:]]
            // Listings are as of the last event: wait for the one that reports last-a and last-b.
            return roster == expected && expected["last-a"] != nil && expected["last-b"] != nil
        }
        #expect(matched, "backend roster \(roster) != broker \(expected)")
        #expect(expected["last-a"] == ["k": "last-a"])
        if maxInstantEvents == 3 {
            #expect(deliveredEvents(receiver).contains { $0["type"]?.stringValue == "interval" }, "the churn reached interval mode")
        }
    }

    /// A backend that starts in the middle of the churn from a `getOnlineUsers` baseline over
    /// the server API (its users and `seq`), then applies only the presence webhooks after that
    /// `seq` (PROTOCOL §11), ends up with the broker's exact roster.
    @Test func aBackendStartingFromAGetOnlineUsersBaselineMatchesTheBroker() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let broker = try broker(url: receiver.url, ["events": ["presence", "channel"], "batchMaxEvents": 5],
                                BrokerProcess.merge(ServerAPIRequest.config, ["presence": ["timeoutSeconds": 0.5]]))
        var generator = SeededGenerator(seed: 1311)
        var connections: [String: RollcallConnection] = [:]
        // Two members that stay, so the channel is never vacated and its seq never restarts.
        for user in ["anchor-a", "anchor-b"] {
            let connection = try broker.session(user)
            try joinOrFail(connection, "room", state: ["k": user])
            connections[user] = connection
        }
        func churn(_ steps: Int) throws {
            for _ in 0..<steps {
                let user = "user-\(Int.random(in: 0..<6, using: &generator))"
                if let connection = connections[user] {
                    switch Int.random(in: 0..<3, using: &generator) {
                    case 0: _ = try connection.channelOp("leave", "room"); connection.close(); connections[user] = nil
                    case 1: connection.drop(); connections[user] = nil
                    default: _ = try connection.channelOp("setState", "room", ["state": ["k": .string("v\(Int.random(in: 0..<5, using: &generator))")]])
                    }
                } else {
                    let connection = try broker.session(user)
                    try joinOrFail(connection, "room", state: ["k": "v0"])
                    connections[user] = connection
                }
            }
        }
        try churn(30)
        let baseline = try ServerAPIRequest.ok(port: broker.port, "getOnlineUsers", ["channel": "room", "includeState": true, "pageSize": 1000])
        let baselineSeq = try #require(baseline["seq"]?.numberValue?.intValue)
        var start: [String: [String: String]] = [:]
        for user in baseline["users"]?.arrayValue ?? [] { start[user["userId"]?.stringValue ?? "?"] = stringMap(user["state"]) ?? [:] }
        try churn(30)
        let observer = try broker.session("observer")
        var expected: [String: [String: String]] = [:]
        var roster: [String: [String: String]] = [:]
        let matched = eventually(timeout: 20) {
            guard let online = try? observer.onlineUsers("room") else { return false }
            expected = online
            let later = deliveredEvents(receiver).filter { ($0["seq"]?.numberValue?.intValue ?? 0) > baselineSeq }
            roster = (try? Self.applyPresence(later, from: start, seq: baselineSeq)) ?? ["<seq gap>": [:]]
            return roster == expected
        }
        #expect(matched, "backend roster \(roster) != broker \(expected)")
        #expect(baselineSeq > 0 && expected["anchor-a"] == ["k": "anchor-a"])
        #expect(!deliveredEvents(receiver).contains { $0["type"]?.stringValue == "vacated" })
    }

    /// Applies `presence` and `channel` events in order to `roster` standing at `seq`:
    /// `vacated` clears the roster and restarts `seq`; any other gap in `seq` throws.
    static func applyPresence(_ events: [JSON], from start: [String: [String: String]] = [:], seq baseline: Int = 0) throws
        -> [String: [String: String]] {
        var roster = start
        var seq = baseline
        for event in events {
            if event["event"]?.stringValue == "channel" {
                if event["type"]?.stringValue == "vacated" { roster = [:]; seq = 0 }
                continue
            }
            guard event["event"]?.stringValue == "presence", let next = event["seq"]?.numberValue?.intValue else { continue }
            guard next == seq + 1 else { throw HarnessError("seq \(next) after \(seq)") }
            seq = next
            let user = event["publisher"]?.stringValue ?? ""
            switch event["type"]?.stringValue {
            case "join", "stateChanged": roster[user] = stringMap(event["state"]) ?? [:]
            case "leave", "timeout": roster[user] = nil
            case "interval":
                let change = event["interval"]
                for joined in change?["join"]?.arrayValue ?? [] { roster[joined.stringValue ?? ""] = [:] }
                for left in (change?["leave"]?.arrayValue ?? []) + (change?["timeout"]?.arrayValue ?? []) {
                    roster[left.stringValue ?? ""] = nil
                }
                for entry in change?["stateChanged"]?.arrayValue ?? [] {
                    roster[entry["userId"]?.stringValue ?? ""] = stringMap(entry["state"]) ?? [:]
                }
            default: break
            }
        }
        return roster
    }
}
