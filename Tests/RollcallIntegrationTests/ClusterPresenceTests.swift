import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// PROTOCOL §9 through the real binaries: three `rollcall` nodes on one throwaway
/// redis-server (``ClusterProcess``), clients placed on chosen nodes, checked against what one
/// broker would answer: snapshots, events with the same `seq` and bytes everywhere, one
/// `interval` event per channel per interval, listings and cursors from any node, `publish`
/// recipients, the start checks, the gauges and `/healthz` when Redis goes away.
@Suite("Cluster presence (3 nodes, one redis-server)", .serialized)
struct ClusterPresenceTests {
    @Test("a snapshot on node A lists the members joined on B and C, with their states and the seq of A's join")
    func snapshotListsMembersOfEveryNode() throws {
        let cluster = try ClusterProcess()
        let bob = try cluster.session("bob", node: 1)
        let carol = try cluster.session("carol", node: 2)
        #expect(try bob.join("lobby", state: ["seat": "B"]).ok)
        #expect(try carol.join("lobby", state: ["seat": "C"]).ok)
        let alice = try cluster.session("alice", node: 0)
        let joined = try alice.join("lobby")
        #expect(joined["occupancy"]?.numberValue?.intValue == 3, "\(joined)")
        let snapshot = try alice.presenceEvent("snapshot", channel: "lobby")
        #expect(snapshot["snapshot"] == [
            ["userId": "alice", "state": [:]], ["userId": "bob", "state": ["seat": "B"]], ["userId": "carol", "state": ["seat": "C"]],
        ])
        #expect(snapshot["occupancy"]?.numberValue?.intValue == 3)
        let toBob = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")
        let toCarol = try carol.presenceEvent("join", channel: "lobby", publisher: "alice")
        #expect(toBob["seq"] != nil)
        #expect(toBob["seq"] == toCarol["seq"], "one seq on every node")
        #expect(snapshot["seq"] == toBob["seq"], "the snapshot carries the seq of the state it shows")
    }

    @Test("presence and message events reach every node with the same seq and the same bytes")
    func eventsAreByteIdenticalOnEveryNode() throws {
        let cluster = try ClusterProcess()
        var recorders: [RawEventRecorder] = []
        var watchers: [RollcallConnection] = []
        for node in 0..<3 {
            let watcher = try cluster.session("w\(node)", node: node)
            recorders.append(RawEventRecorder(watcher))
            #expect(try watcher.join("lobby", messages: true).ok)
            watchers.append(watcher)
        }
        let dave = try cluster.session("dave", node: 1)
        #expect(try dave.join("lobby", state: ["k": "1"]).ok)
        #expect(try dave.channelOp("setState", "lobby", ["state": ["k": "2", "j": "x"]]).ok)
        #expect(try dave.channelOp("removeState", "lobby", ["keys": ["k"]]).ok)
        #expect(try dave.channelOp("publish", "lobby", ["message": ["text": "hé\nllo", "n": [1, true, nil]]])["recipients"]?.numberValue?.intValue == 3)
        #expect(try dave.channelOp("leave", "lobby").ok)

        func aboutDave(_ recorder: RawEventRecorder) -> [RawEventRecorder.Line] {
            recorder.presence(in: "lobby").filter { $0.json["publisher"]?.stringValue == "dave" }
        }
        let arrived = eventually(timeout: 10) {
            recorders.allSatisfy { aboutDave($0).count == 4 && $0.messages(in: "lobby").count == 1 }
        }
        #expect(arrived, "\(recorders.map { aboutDave($0).map(\.text) })")
        let reference = aboutDave(recorders[0])
        #expect(reference.map(\.type) == ["join", "stateChanged", "stateChanged", "leave"])
        let seqs = reference.compactMap(\.seq)
        #expect(seqs.count == 4 && zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 }, "seq steps by one: \(seqs)")
        for node in 1..<3 {
            #expect(aboutDave(recorders[node]).map(\.bytes) == reference.map(\.bytes),
                    "n\(node + 1) sent other bytes than n1:\n\(aboutDave(recorders[node]).map(\.text))\nvs\n\(reference.map(\.text))")
            #expect(recorders[node].messages(in: "lobby").map(\.bytes) == recorders[0].messages(in: "lobby").map(\.bytes))
        }
        _ = watchers
    }

    @Test("interval mode: exactly one interval event per channel per interval in the whole cluster, one seq order, one mode")
    func oneIntervalEventPerIntervalInTheCluster() throws {
        let cluster = try ClusterProcess(config: ["presence": ["maxInstantEvents": 3, "hysteresis": 1, "intervalSeconds": 0.2]])
        var clients: [RollcallConnection] = []
        var recorders: [RawEventRecorder] = []
        var modes: [String] = []
        for index in 0..<6 {
            let client = try cluster.session("u\(index)")  // n1, n2, n3, n1, n2, n3
            recorders.append(RawEventRecorder(client))
            let reply = try client.join("stage")
            #expect(reply.ok, "\(reply)")
            modes.append(reply["mode"]?.stringValue ?? "?")
            clients.append(client)
        }
        #expect(modes == ["announce", "announce", "announce", "interval", "interval", "interval"], "one mode on every node")

        func intervals(_ recorder: RawEventRecorder) -> [RawEventRecorder.Line] {
            recorder.presence(in: "stage").filter { $0.type == "interval" }
        }
        // One change at a time, each from another node; wait until it was announced before the next.
        let rounds = 6
        for round in 0..<rounds {
            let user = "u\(round)"
            #expect(try clients[round].channelOp("setState", "stage", ["state": ["r": .string("\(round)")]]).ok)
            let announced = eventually(timeout: 10) {
                recorders.allSatisfy { recorder in
                    intervals(recorder).contains { line in
                        line.json["interval"]?["stateChanged"]?.arrayValue?.contains(["userId": .string(user), "state": ["r": .string("\(round)")]]) == true
                    }
                }
            }
            #expect(announced, "round \(round): \(recorders.map { intervals($0).map(\.text) })")
        }
        // Every client has seen the same last interval event.
        var last: [Int?] = []
        _ = eventually(timeout: 5) {
            last = recorders.map { intervals($0).last?.seq }
            return Set(last).count == 1
        }
        #expect(Set(last).count == 1, "last interval seq per client: \(last)")

        var bytesBySeq: [Int: [UInt8]] = [:]
        for (index, recorder) in recorders.enumerated() {
            let seen = intervals(recorder)
            let seqs = seen.compactMap(\.seq)
            #expect(Set(seqs).count == seqs.count, "u\(index) got a seq twice: \(seqs)")
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $1 == $0 + 1 }, "u\(index): interval seqs not contiguous: \(seqs)")
            #expect(seen.allSatisfy { $0.json["mode"]?.stringValue == "interval" })
            for line in seen {
                guard let seq = line.seq else { continue }
                if let other = bytesBySeq[seq] {
                    #expect(other == line.bytes, "seq \(seq) differs between clients:\n\(line.text)\n\(String(decoding: other, as: UTF8.self))")
                } else {
                    bytesBySeq[seq] = line.bytes
                }
            }
        }
        // Each round's change is one interval; the joins after the switch take at most three more.
        // One flusher per node would give about three times as many.
        #expect(bytesBySeq.count <= rounds + 3, "\(bytesBySeq.count) interval events for \(rounds) changes: \(bytesBySeq.keys.sorted())")
    }

    @Test("getOnlineUsers: byte order across nodes; a nextPage cursor from node A continues on B and C")
    func onlineUsersCursorWorksOnEveryNode() throws {
        let cluster = try ClusterProcess()
        let names = ["zed", "Zoe", "alice", "bob", "carol", "dave", "émile"]
        var members: [RollcallConnection] = []
        for name in names {
            let member = try cluster.session(name)  // spread over the nodes in rotation
            #expect(try member.join("hall", presence: false, state: ["name": name]).ok)
            members.append(member)
        }
        let readers = try (0..<3).map { try cluster.session("reader\($0)", node: $0) }
        var seen: [String] = []
        var page: String?
        var pages = 0
        repeat {
            var more: JSONObject = ["pageSize": 3, "includeState": true]
            if let page { more["page"] = .string(page) }
            let reply = try readers[pages % 3].channelOp("getOnlineUsers", "hall", more)
            #expect(reply.ok, "page \(pages) on n\(pages % 3 + 1): \(reply)")
            #expect(reply["totalOccupancy"]?.numberValue?.intValue == names.count)
            for user in reply["users"]?.arrayValue ?? [] {
                let id = try #require(user["userId"]?.stringValue)
                #expect(user["state"] == ["name": .string(id)])
                seen.append(id)
            }
            page = reply["nextPage"]?.stringValue
            pages += 1
        } while page != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        _ = members
    }

    @Test("getUserChannels and getState answer the same on every node")
    func userChannelsAndStateFromAnyNode() throws {
        let cluster = try ClusterProcess()
        let bob = try cluster.session("bob", node: 0)
        for (channel, stream) in [("zoo", false), ("lobby", true), ("Lobby", false), ("lobby", false)] {
            #expect(try bob.join(channel, stream: stream, state: ["on": channel]).ok)
        }
        let readers = try (0..<3).map { try cluster.session("reader\($0)", node: $0) }
        let expected: JSON = ["totalChannel": 4, "channels": [
            ["channel": "Lobby", "channelType": "message"], ["channel": "lobby", "channelType": "message"],
            ["channel": "zoo", "channelType": "message"], ["channel": "lobby", "channelType": "stream"],
        ]]
        for (node, reader) in readers.enumerated() {
            #expect(try reader.request("getUserChannels", ["userId": "bob"]).result == expected, "n\(node + 1)")
            #expect(try reader.channelOp("getState", "zoo", ["userId": "bob"]).result == ["userId": "bob", "state": ["on": "zoo"]], "n\(node + 1)")
            #expect(try reader.channelOp("getState", "lobby", stream: true, ["userId": "bob"])["state"] == ["on": "lobby"], "n\(node + 1)")
        }
        #expect(try bob.channelOp("leave", "zoo").ok)
        #expect(try bob.channelOp("setState", "Lobby", ["state": ["on": "moved"]]).ok)
        for (node, reader) in readers.enumerated() {
            #expect(try reader.request("getUserChannels", ["userId": "bob"])["totalChannel"]?.numberValue?.intValue == 3, "n\(node + 1)")
            #expect(try reader.channelOp("getState", "zoo", ["userId": "bob"]).errorCode == .userNotPresent, "n\(node + 1)")
            #expect(try reader.channelOp("getState", "Lobby", ["userId": "bob"])["state"] == ["on": "moved"], "n\(node + 1)")
        }
    }

    @Test("publish: recipients counts the sessions on every node; each of them gets the message")
    func publishRecipientsSpanNodes() throws {
        let cluster = try ClusterProcess()
        let alicePhone = try cluster.session("alice", node: 0)
        let aliceLaptop = try cluster.session("alice", node: 1)
        let bob = try cluster.session("bob", node: 1)
        let carol = try cluster.session("carol", node: 2)
        let dave = try cluster.session("dave", node: 2)
        for member in [alicePhone, aliceLaptop, bob, carol] { #expect(try member.join("lobby", presence: false).ok) }
        #expect(try dave.join("lobby", presence: false, messages: false).ok)
        let outsider = try cluster.session("outsider", node: 0)
        let sent = try outsider.channelOp("publish", "lobby", ["message": "to all"])
        #expect(sent["recipients"]?.numberValue?.intValue == 4, "alice ×2, bob, carol; not dave (messages: false): \(sent)")
        for member in [alicePhone, aliceLaptop, bob, carol] {
            #expect(try member.messageEvent(channel: "lobby")["message"] == "to all")
        }
        #expect(try dave.eventsAfterBarrier().filter { $0.name == "message" }.isEmpty)

        let own = try alicePhone.channelOp("publish", "lobby", ["message": "from alice"])
        #expect(own["recipients"]?.numberValue?.intValue == 3, "not the publishing session: \(own)")
        #expect(try aliceLaptop.messageEvent(channel: "lobby")["publisher"]?.stringValue == "alice")
        #expect(try alicePhone.eventsAfterBarrier().filter { $0.name == "message" }.isEmpty)
    }

    @Test("a node whose presence, state, userStatus or limits section differs from the running nodes' refuses to start, naming the section")
    func nodeWithOtherSharedSectionIsRefused() throws {
        let cluster = try ClusterProcess(config: ["presence": ["intervalSeconds": 0.5]])
        let differing: [(section: String, override: [String: Any])] = [
            ("presence", ["presence": ["intervalSeconds": 1]]),
            ("state", ["state": ["maxKeys": 7]]),
            ("userStatus", ["userStatus": ["maxSubscriptionsPerUser": 7]]),
            ("limits", ["limits": ["maxSessionsPerUser": 7]]),
        ]
        for (section, override) in differing {
            let outcome = try ExternalCommand.runBroker(config: cluster.config(forNode: 3, overriding: override))
            #expect(outcome.status != 0, "\(section): stdout: \(outcome.stdout) stderr: \(outcome.stderr)")
            #expect(outcome.stderr.contains("\(section): this section differs"), "\(section): stderr: \(outcome.stderr)")
            #expect(!outcome.stdout.contains("listening on"))
        }
        #expect(cluster.waitUntilFormed(timeout: 5), "the running nodes are undisturbed: \(cluster.describeNodes())")
    }

    @Test("a key prefix holding foreign data refuses to start, naming cluster.keyPrefix")
    func foreignDataUnderThePrefixIsRefused() throws {
        let redis = try RedisServer()
        let prefix = "foreign" + UUID().uuidString.prefix(6).lowercased() + ":"
        #expect(try RedisWire.command(port: redis.port, ["SET", prefix + "foo", "bar"]) == "+OK")
        let config = BrokerProcess.merge(BrokerProcess.baseConfig, ["cluster": [
            "redis": redis.url(), "keyPrefix": prefix, "nodeId": "n1", "heartbeatSeconds": 0.2, "nodeTimeoutSeconds": 1,
        ]])
        let outcome = try ExternalCommand.runBroker(config: config)
        #expect(outcome.status != 0, "stdout: \(outcome.stdout) stderr: \(outcome.stderr)")
        #expect(outcome.stderr.contains("cluster.keyPrefix"), "stderr: \(outcome.stderr)")
        #expect(try RedisWire.command(port: redis.port, ["GET", prefix + "foo"]) == "$3", "the foreign key is left alone")
    }

    @Test("/metrics on every node: rollcall_cluster_nodes 3 and rollcall_redis_connected 1")
    func gaugesOnEveryNode() throws {
        let cluster = try ClusterProcess()
        for index in 0..<3 {
            let node = cluster.node(index)
            let formed = eventually(timeout: 10) {
                (try? node.metric("rollcall_cluster_nodes")) == 3 && (try? node.metric("rollcall_redis_connected")) == 1
            }
            #expect(formed, "n\(index + 1): \(cluster.describeNodes())")
        }
        // A node gone for good drops out of the others' count once nodeTimeoutSeconds passed.
        cluster.kill(node: 2)
        for index in 0..<2 {
            #expect(eventually(timeout: 10) { (try? cluster.node(index).metric("rollcall_cluster_nodes")) == 2 },
                    "n\(index + 1): \(cluster.describeNodes())")
        }
    }

    /// A node prints `listening on` only once its Redis links are connected (docs/cluster.md,
    /// "Ready"): before, a client that logged in within its first milliseconds could be
    /// answered UNAVAILABLE (a JS cluster test was, once).
    @Test("a node announces itself only once Redis is connected: /healthz is 200 and a login and join succeed right away")
    func readyWhenAnnounced() throws {
        let cluster = try ClusterProcess(nodeCount: 1)
        for index in 1...3 {
            let node = try BrokerProcess(config: cluster.config(forNode: index))
            defer { node.kill() }
            #expect(try RawHTTP.get(port: node.port, path: "/healthz").status == 200, "node \(index + 1)")
            #expect(try RawHTTP.get(port: node.port, path: "/readyz").status == 200, "node \(index + 1)")
            let client = try node.session("early-\(index)")
            #expect(try client.join("doorstep").ok, "node \(index + 1)")
        }
    }

    @Test("/healthz answers 503 on every node once redis-server is killed, 200 again after it restarts on the same port")
    func healthFollowsRedis() throws {
        let cluster = try ClusterProcess()
        func health(_ index: Int) -> Int? { try? RawHTTP.get(port: cluster.node(index).port, path: "/healthz").status }
        #expect((0..<3).allSatisfy { health($0) == 200 })
        cluster.redis.kill()
        #expect(eventually(timeout: 10) { (0..<3).allSatisfy { health($0) == 503 } }, "\((0..<3).map(health))")
        #expect((0..<3).allSatisfy { (try? cluster.node($0).metric("rollcall_redis_connected")) == 0 })
        try cluster.redis.restart()
        #expect(eventually(timeout: 15) { (0..<3).allSatisfy { health($0) == 200 } }, "\((0..<3).map(health)) \(cluster.describeNodes())")
        #expect(cluster.waitUntilFormed(timeout: 10), "\(cluster.describeNodes())")
    }

    /// PROTOCOL §1 (1.2): `/readyz` (and `/healthz`) say why a node cannot serve; `/livez`
    /// stays 200 through a Redis outage (a liveness probe must not restart every node).
    @Test("/readyz answers 503 with one reason line while redis-server is stopped (SIGSTOP) or answers errors; /livez stays 200")
    func healthFollowsAStalledRedis() throws {
        let cluster = try ClusterProcess()
        func get(_ index: Int, _ path: String) -> HTTPResponse? { try? RawHTTP.get(port: cluster.node(index).port, path: path) }
        func health(_ index: Int) -> Int? { get(index, "/healthz")?.status }
        func ready(_ index: Int) -> Int? { get(index, "/readyz")?.status }
        cluster.redis.suspend()
        let stoppedAt = Date()
        #expect(eventually(timeout: 10) { (0..<3).allSatisfy { ready($0) == 503 } }, "\((0..<3).map(ready))")
        let noticedAfter = Date().timeIntervalSince(stoppedAt)
        #expect(noticedAfter < 2.5, "noticed after \(noticedAfter) s; nodeTimeoutSeconds is 1 (1.5 s slack for a loaded machine)")
        #expect((0..<3).allSatisfy { health($0) == 503 }, "\((0..<3).map(health))")
        #expect((0..<3).allSatisfy { get($0, "/livez")?.status == 200 }, "liveness does not depend on Redis")
        let reason = get(0, "/readyz")?.bodyText ?? ""
        #expect(reason.hasPrefix("cluster: Redis") && reason.contains("unreachable"), "\(reason)")
        #expect(reason.filter { $0 == "\n" }.count == 1, "one line: \(reason)")
        cluster.redis.resume()
        #expect(eventually(timeout: 15) { (0..<3).allSatisfy { ready($0) == 200 } }, "\((0..<3).map(ready)) \(cluster.describeNodes())")

        // Reachable but refusing every write (no replica for min-replicas-to-write): not ready.
        #expect(try RedisWire.command(port: cluster.redisPort, ["CONFIG", "SET", "min-replicas-to-write", "1"]) == "+OK")
        #expect(eventually(timeout: 10) { (0..<3).allSatisfy { ready($0) == 503 } }, "\((0..<3).map(ready))")
        let refusing = get(1, "/readyz")?.bodyText ?? ""
        #expect(refusing.hasPrefix("cluster: Redis answers errors (NOREPLICAS"), "\(refusing)")
        #expect((0..<3).allSatisfy { get($0, "/livez")?.status == 200 })
        // A request meanwhile is answered "not now" (session 45: NOREPLICAS from inside a script
        // was answered INTERNAL, chaos on a Redis Cluster with min-replicas-to-write).
        let refused = try cluster.connect(node: 2).login(userId: "refused")
        #expect(refused.errorCode == .unavailable && refused.retryAfterMs != nil, "\(refused)")
        #expect(try RedisWire.command(port: cluster.redisPort, ["CONFIG", "SET", "min-replicas-to-write", "0"]) == "+OK")
        #expect(eventually(timeout: 10) { (0..<3).allSatisfy { ready($0) == 200 } }, "\((0..<3).map(ready))")
    }

    @Test("through nginx round-robin: consecutive clients land on different nodes and see one broker")
    func throughTheProxy() throws {
        let cluster = try ClusterProcess(routing: .proxy)
        let clients = try (0..<3).map { try cluster.session("p\($0)") }
        for client in clients { #expect(try client.join("lobby").ok) }
        let snapshot = try clients[2].presenceEvent("snapshot", channel: "lobby")
        #expect(snapshot["snapshot"]?.arrayValue?.compactMap { $0["userId"]?.stringValue } == ["p0", "p1", "p2"])
        #expect(try clients[0].presenceEvent("join", channel: "lobby", publisher: "p2")["seq"]
                == clients[1].presenceEvent("join", channel: "lobby", publisher: "p2")["seq"])
        // The access log names the upstream of each WebSocket: three different nodes.
        let upstreams = cluster.proxy.accessLog.split(separator: "\n").filter { $0.contains("GET /v1") }
            .compactMap { $0.split(separator: "upstream=").last.map(String.init) }
        _ = clients.map { $0.close() }
        let closed = eventually(timeout: 10) {
            cluster.proxy.accessLog.split(separator: "\n").filter { $0.contains("GET /v1") }.count == 3
        }
        let lines = cluster.proxy.accessLog.split(separator: "\n").filter { $0.contains("GET /v1") }
        #expect(closed, "\(lines)")
        #expect(Set(lines.compactMap { $0.split(separator: "upstream=").last }).count == 3, "\(lines) \(upstreams)")
    }

    @Test("a node whose Redis subscription is cut while events are published never delivers past the gap: a fresh snapshot repairs the roster")
    func missedEventsBringAFreshSnapshot() throws {
        let (cluster, alice, bob, base) = try Self.twoMembersOnTwoNodes()
        let subscribed = Self.subscriptions(cluster)
        #expect(subscribed.count >= 3, "\(subscribed)")
        var roster = RollcallClient.Roster(channel: "lobby")
        roster.apply(Event(["event": "presence", "type": "snapshot", "channel": "lobby", "seq": .int(base),
                            "snapshot": [["userId": "alice", "state": [:]], ["userId": "bob", "state": ["k": "0"]]]]))
        var seen: [Event] = []
        for round in 1...3 {
            // Cut every node's subscription and change at once: published while alice's node is not subscribed.
            #expect(try RedisWire.command(port: cluster.redisPort, ["CLIENT", "KILL", "TYPE", "pubsub"]).hasPrefix(":"))
            #expect(try bob.channelOp("setState", "lobby", ["state": ["k": .string("\(round)")]]).ok)
            let repaired = eventually(timeout: 10) {
                for event in alice.drainEvents() where event.name == "presence" {
                    if event.type != "snapshot", let seq = event["seq"]?.numberValue?.intValue, let last = roster.seq {
                        #expect(seq == last + 1, "an event past a gap: \(event) after seq \(last)")
                    }
                    roster.apply(event)
                    seen.append(event)
                }
                return roster.members["bob"]?.state == ["k": "\(round)"]
            }
            #expect(repaired, "round \(round): \(seen)")
            #expect(eventually(timeout: 10) { Self.subscriptions(cluster) == subscribed })
        }
        #expect(roster.seq == base + 3, "\(seen)")
    }

    @Test("a node whose Redis subscription is cut while nothing happens sends nothing once back (seq unchanged)")
    func quietCutSendsNothing() throws {
        let (cluster, alice, bob, base) = try Self.twoMembersOnTwoNodes()
        let subscribed = Self.subscriptions(cluster)
        #expect(try RedisWire.command(port: cluster.redisPort, ["CLIENT", "KILL", "TYPE", "pubsub"]).hasPrefix(":"))
        #expect(eventually(timeout: 10) { Self.subscriptions(cluster) == subscribed }, "\(Self.subscriptions(cluster)) vs \(subscribed)")
        #expect(try bob.channelOp("setState", "lobby", ["state": ["k": "1"]]).ok)
        let next = try alice.waitForEvent(timeout: presenceDeadline) { $0.name == "presence" }
        #expect(next.type == "stateChanged" && next["seq"]?.numberValue?.intValue == base + 1, "no snapshot without a gap: \(next)")
    }

    /// alice on n1 and bob (state `k: 0`) on n2 in `lobby`; alice has had her snapshot and bob's
    /// join, whose seq is returned.
    private static func twoMembersOnTwoNodes() throws -> (ClusterProcess, RollcallConnection, RollcallConnection, Int) {
        let cluster = try ClusterProcess()
        let alice = try cluster.session("alice", node: 0)
        #expect(try alice.join("lobby").ok)
        _ = try alice.presenceEvent("snapshot", channel: "lobby")
        let bob = try cluster.session("bob", node: 1)
        #expect(try bob.join("lobby", state: ["k": "0"]).ok)
        let joined = try alice.presenceEvent("join", channel: "lobby", publisher: "bob")
        return (cluster, alice, bob, try #require(joined["seq"]?.numberValue?.intValue))
    }

    /// The sorted `sub=` counts of the cluster's pub/sub connections to Redis (one per node).
    private static func subscriptions(_ cluster: ClusterProcess) -> [Int] {
        let list = (try? RedisWire.bulk(port: cluster.redisPort, ["CLIENT", "LIST", "TYPE", "pubsub"])) ?? ""
        return list.split(separator: "\n").compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("sub=") }.flatMap { Int($0.dropFirst(4)) }
        }.sorted()
    }
}
