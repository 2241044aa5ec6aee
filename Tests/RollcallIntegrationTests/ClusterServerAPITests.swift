import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// The server API (PROTOCOL §10) and presence webhooks (§11) on three nodes of one cluster
/// (``ClusterProcess``): every op answers for the whole cluster from any node, and each webhook
/// event is delivered once in the whole cluster, by the node that produced it, with the bytes
/// clients got plus its `id`.
@Suite("Cluster server API and webhooks (3 nodes, one redis-server)", .serialized)
struct ClusterServerAPITests {
    static let secret = "cluster-webhook-secret"

    /// `POST /api/v1/<op>` on node `index`; the result of a call that must succeed.
    private func api(_ cluster: ClusterProcess, node index: Int, _ op: String, _ body: JSON = [:]) throws -> JSON {
        try ServerAPIRequest.ok(port: cluster.node(index).port, op, body)
    }

    @Test("every op answers for the whole cluster from any node; publish and disconnectUser reach other nodes")
    func everyOpFromAnyNode() throws {
        let cluster = try ClusterProcess(config: BrokerProcess.merge(ServerAPIRequest.config, ["presence": ["timeoutSeconds": 60]]))
        let alice = try cluster.session("alice", node: 0)
        let bob = try cluster.session("bob", node: 1)
        let carol = try cluster.session("carol", node: 2)
        #expect(try alice.join("room", messages: true, state: ["seat": "A"]).ok)
        #expect(try bob.join("room", messages: true, state: ["seat": "B"]).ok)
        #expect(try carol.join("live", stream: true).ok)
        let lastJoin = try alice.presenceEvent("join", channel: "room", publisher: "bob")
        let seq = try #require(lastJoin["seq"]?.numberValue?.intValue)

        let users: JSON = [["userId": "alice", "state": ["seat": "A"]], ["userId": "bob", "state": ["seat": "B"]]]
        for node in 0..<3 {
            let online = try api(cluster, node: node, "getOnlineUsers", ["channel": "room", "includeState": true])
            #expect(online["users"] == users, "n\(node + 1): \(online)")
            #expect(online["seq"]?.numberValue?.intValue == seq, "n\(node + 1): the seq of the last event")
            #expect(online["totalOccupancy"] == 2)
            #expect(online == (try alice.request("getOnlineUsers", ["channel": "room", "includeState": true]).result), "as over WebSocket")
            let channels = try api(cluster, node: node, "getChannels")
            #expect(channels["channels"]?.arrayValue?.map { "\($0["channelType"]?.stringValue ?? "?") \($0["channel"]?.stringValue ?? "?") \($0["occupancy"]?.numberValue?.intValue ?? -1)" }
                == ["message room 2", "stream live 1"], "n\(node + 1): \(channels)")
            #expect(try api(cluster, node: node, "getUserChannels", ["userId": "bob"]) == (try carol.request("getUserChannels", ["userId": "bob"]).result))
            let statuses = try api(cluster, node: node, "getUserStatus", ["userIds": ["alice", "bob", "carol", "nobody"]])
            #expect(statuses["statuses"]?.arrayValue?.map { $0["status"]?.stringValue ?? "?" } == ["online", "online", "online", "loggedOut"], "nobody: never seen")
            #expect(try api(cluster, node: node, "getState", ["channel": "room", "userId": "bob"])["state"] == ["seat": "B"])
            let info = try api(cluster, node: node, "getInfo")
            #expect(info["nodes"]?.arrayValue?.compactMap { $0["nodeId"]?.stringValue }.sorted() == ["n1", "n2", "n3"], "\(info)")
            #expect(info["sessions"] == 3 && info["channels"] == 2, "\(info)")
        }

        // Pipelined on a node, where the core answers in a later feed (after Redis): in order,
        // or the first answer then a clean close.
        let online = HTTPPipeliningTests.request("POST", "/api/v1/getOnlineUsers", body: Array(#"{"channel":"room"}"#.utf8))
        let healthz = HTTPPipeliningTests.request("GET", "/healthz", key: nil)
        try HTTPPipeliningTests.expectPipelined(cluster.node(1), [online, healthz], statuses: [200, 200], required: 2, session: alice)
        try HTTPPipeliningTests.expectPipelined(cluster.node(1), [online, online], statuses: [200, 200], required: 1, session: alice)

        // publish from n3 reaches the members on n1 and n2.
        #expect(try api(cluster, node: 2, "publish", ["channel": "room", "message": ["text": "hi"], "publisher": "ops"]) == ["recipients": 2])
        for member in [alice, bob] {
            let message = try member.messageEvent(channel: "room")
            #expect(message["publisher"] == "ops" && message["message"] == ["text": "hi"])
        }

        // disconnectUser from n1: bob's live session on n2 closes with 4403 and the reason.
        #expect(try api(cluster, node: 0, "disconnectUser", ["userId": "bob", "reason": "banned"]) == ["sessions": 1])
        let close = try bob.waitForClose(timeout: .seconds(5))
        #expect(close.code == 4403 && close.reason == "banned")
        #expect(try alice.presenceEvent("leave", channel: "room", publisher: "bob")["publisher"] == "bob")

        // A session held on n3 (its connection dropped) ends at once, as by logout.
        let dave = try cluster.connect(node: 2)
        #expect(try dave.login(userId: "dave", platform: "cli").ok)
        #expect(try dave.join("room").ok)
        _ = try alice.presenceEvent("join", channel: "room", publisher: "dave")
        dave.drop()
        #expect(eventually(timeout: 10) { (try? cluster.metric("rollcall_sessions{state=\"held\"}")) == 1 }, "dave is held")
        #expect(try api(cluster, node: 1, "disconnectUser", ["userId": "dave"]) == ["sessions": 1])
        let gone = try alice.waitForEvent(timeout: .seconds(5)) { $0.name == "presence" && ($0.type == "leave" || $0.type == "timeout") }
        #expect(gone.type == "leave" && gone["publisher"] == "dave", "ended as by logout, not by the hold's timeout")
        #expect(eventually(timeout: 5) { (try? cluster.metric("rollcall_sessions{state=\"held\"}")) == 0 })
        #expect(try api(cluster, node: 2, "getUserStatus", ["userIds": ["bob", "dave"]])["statuses"]?.arrayValue?
            .map { $0["status"]?.stringValue ?? "?" } == ["loggedOut", "loggedOut"])
    }

    @Test("Redis stopped: the API answers 503 UNAVAILABLE on every node within nodeTimeoutSeconds, 200 again after")
    func unavailableWhileRedisIsStopped() throws {
        let cluster = try ClusterProcess(config: ServerAPIRequest.config)  // nodeTimeoutSeconds 1
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("room").ok)
        cluster.redis.suspend()
        defer { cluster.redis.resume() }
        for node in 0..<3 {
            for (op, body) in [("getOnlineUsers", ["channel": "room"] as JSON), ("publish", ["channel": "room", "message": 1])] {
                let started = Date()
                let (status, answer) = try ServerAPIRequest.call(port: cluster.node(node).port, op, body)
                let waited = Date().timeIntervalSince(started)
                #expect(status == 503 && answer["error"]?["code"] == "UNAVAILABLE", "n\(node + 1) \(op): \(status) \(answer)")
                #expect((answer["error"]?["retryAfterMs"]?.numberValue?.intValue ?? 0) > 0, "\(answer)")
                #expect(waited < 2.5, "n\(node + 1) \(op) waited \(waited) s; nodeTimeoutSeconds is 1")
            }
        }
        cluster.redis.resume()
        #expect(eventually(timeout: 15) {
            (0..<3).allSatisfy { (try? ServerAPIRequest.call(port: cluster.node($0).port, "getOnlineUsers", ["channel": "room"]).status) == 200 }
        }, "\(cluster.describeNodes())")
    }

    @Test("presence, channel and userStatus webhooks: each event once in the whole cluster, the clients' bytes plus id")
    func webhooksOncePerEvent() throws {
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let cluster = try ClusterProcess(config: ["webhooks": [
            "url": receiver.url, "secret": Self.secret, "batchMaxDelaySeconds": 0.05, "batchMaxEvents": 7,
        ]])
        // A watcher on every node records the exact bytes it gets.
        var watchers: [RollcallConnection] = []
        var recorders: [RawEventRecorder] = []
        for node in 0..<3 {
            let watcher = try cluster.session("w\(node + 1)", node: node)
            #expect(try watcher.join("lobby").ok)
            watchers.append(watcher)
        }
        for watcher in watchers { recorders.append(RawEventRecorder(watcher)) }
        // Activity on every node: joins, state changes, leaves, a second channel that empties.
        var users: [RollcallConnection] = []
        for index in 0..<6 {
            let user = try cluster.session("u\(index)", node: index % 3)
            #expect(try user.join("lobby", state: ["n": "\(index)"]).ok)
            #expect(try user.join("side-\(index % 2)").ok)
            users.append(user)
        }
        for (index, user) in users.enumerated() {
            #expect(try user.channelOp("setState", "lobby", ["state": ["n": .string("x\(index)")]]).ok)
            if index % 2 == 0 { #expect(try user.channelOp("leave", "lobby").ok) }
            #expect(try user.channelOp("leave", "side-\(index % 2)").ok)
        }
        let lastSeq = 3 + 6 + 6 + 3  // the watchers' joins, the users' joins, state changes, leaves
        func lobbyEvents(_ recorder: RawEventRecorder) -> [RawEventRecorder.Line] {
            recorder.presence(in: "lobby").filter { $0.type != "snapshot" }
        }
        #expect(eventually(timeout: 10) { recorders.allSatisfy { ($0.presence(in: "lobby").last?.seq ?? 0) == lastSeq } },
                "\(recorders.map { lobbyEvents($0).compactMap(\.seq) })")
        func delivered() -> [JSON] { receiver.acknowledged.flatMap(\.events) }
        func sideVacated(_ events: [JSON]) -> Int {
            events.filter { $0["event"]?.stringValue == "channel" && $0["type"]?.stringValue == "vacated" }.count
        }
        #expect(receiver.wait(timeout: 15) { requests in
            let events = requests.filter(\.answeredOK).flatMap(\.events)
            return sideVacated(events) >= 2 && events.contains { $0["channel"]?.stringValue == "lobby" && $0["seq"]?.numberValue?.intValue == lastSeq }
        })
        // Every event any node queued is delivered (a duplicate would be queued by a second node).
        #expect(eventually(timeout: 10) {
            guard let queued = try? cluster.metric("rollcall_webhook_events_queued_total"),
                  let acknowledged = try? cluster.metric("rollcall_webhook_events_delivered_total") else { return false }
            return queued == acknowledged && acknowledged == delivered().count
        }, "queued \(String(describing: try? cluster.metric("rollcall_webhook_events_queued_total"))), received \(delivered().count)")
        let events = delivered()
        let ids = events.compactMap { $0["id"]?.stringValue }
        #expect(ids.count == events.count && Set(ids).count == ids.count, "every event has an id, each once")
        let senders = Set(receiver.requests.map { $0.json["node"]?.stringValue ?? "?" })
        #expect(senders.isSubset(of: ["n1", "n2", "n3"]), "\(senders)")

        // Presence: every seq of the lobby once, in one order, the bytes every client got plus id.
        let lobby = events.filter { $0["event"]?.stringValue == "presence" && $0["channel"]?.stringValue == "lobby" }
        #expect(lobby.compactMap { $0["seq"]?.numberValue?.intValue }.sorted() == Array(1...(lastSeq)))
        let bodies = receiver.acknowledged.map(\.body)
        for recorder in recorders {
            for line in lobbyEvents(recorder) {
                guard let event = lobby.first(where: { $0["seq"]?.numberValue?.intValue == line.seq }),
                      let id = event["id"]?.stringValue else {
                    Issue.record("no webhook for \(line.text)")
                    continue
                }
                let expected = Array("{\"id\":\"\(id)\",".utf8) + line.bytes.dropFirst()
                #expect(bodies.contains { $0.contains(expected) }, "webhook bytes differ from the client's: \(line.text)")
            }
        }
        // Channels: occupied and vacated once per change; side-0 and side-1 each filled and emptied once.
        let channelEvents = events.filter { $0["event"]?.stringValue == "channel" }
            .map { "\($0["channel"]?.stringValue ?? "?") \($0["type"]?.stringValue ?? "?")" }
        #expect(channelEvents.sorted() == ["lobby occupied", "side-0 occupied", "side-0 vacated", "side-1 occupied", "side-1 vacated"])
        // User status: online once per user.
        let online = events.filter { $0["event"]?.stringValue == "userStatus" }.compactMap { $0["status"]?["userId"]?.stringValue }
        #expect(online.sorted() == ["u0", "u1", "u2", "u3", "u4", "u5", "w1", "w2", "w3"])
        _ = users
    }
}

extension Array where Element == UInt8 {
    /// True when `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}
