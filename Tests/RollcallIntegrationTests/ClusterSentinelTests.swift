import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// PROTOCOL §9 "Which Redis", Sentinel, through the real binaries: a master, its replica and
/// three sentinels (small timeouts) on loopback, two nodes on `redis+sentinel://`. The master
/// is killed (-9); the sentinels promote the replica; meanwhile requests answer `UNAVAILABLE`
/// (never `INTERNAL`) and `/readyz` says 503; then, with no node restarted, a join on one node
/// reaches a member on the other, logins and the server API work.
@Suite("Cluster on Redis Sentinel", .serialized)
struct ClusterSentinelTests {
    @Test("the master dies: the sentinels promote the replica and both nodes follow it, UNAVAILABLE meanwhile, no restart")
    func followsAFailover() throws {
        let redis = try SentinelRedis()
        let (master, replica, sentinels) = (redis.master, redis.replica, redis.sentinels)
        let url = redis.url
        let cluster = try ClusterProcess(config: ServerAPIRequest.config, nodeCount: 2, redis: master, redisURL: url)
        let pids = (0..<2).map { cluster.node($0).process.pid }
        #expect(try cluster.metric("rollcall_redis_master_changes_total") == 0)

        let alice = try cluster.session("alice", node: 0)
        let bob = try cluster.session("bob", node: 1)
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby")["occupancy"]?.numberValue?.intValue == 2)
        #expect(throws: Never.self) { try alice.presenceEvent("join", channel: "lobby", publisher: "bob") }

        // The replica has every write so far (asynchronous replication could lose the last
        // ones: then the nodes resync, or start over empty, as after a Redis restart).
        let acknowledged = try RedisWire.command(port: master.port, ["WAIT", "1", "2000"])
        #expect(acknowledged == ":1", "the replica acknowledged the writes: \(replica.log.suffix(2000))")
        master.kill()
        // Until the replica is promoted and both nodes are on it, what needs Redis answers
        // UNAVAILABLE with retryAfterMs (or succeeds, before a node noticed), never anything else.
        var unavailable = 0
        var otherFailures: [String] = []
        var round = 0
        let followed = eventually(timeout: 40) {
            round += 1
            if round % 5 == 0, let reply = try? alice.channelOp("setState", "lobby", ["state": ["round": .string("\(round)")]]), !reply.ok {
                if reply.errorCode == .unavailable, (reply.retryAfterMs ?? 0) > 0 { unavailable += 1 } else { otherFailures.append("\(reply)") }
            }
            return (try? RedisWire.command(port: replica.port, ["ROLE"])) == "*3"  // a master's ROLE has 3 elements
                && (0..<2).allSatisfy { (try? RawHTTP.get(port: cluster.node($0).port, path: "/readyz").status) == 200 }
        }
        #expect(followed, "the nodes did not follow the failover: \(cluster.describeNodes())\nsentinel: \(sentinels[0].log.suffix(3000))")
        #expect(unavailable > 0, "a request made while there was no master answers UNAVAILABLE")
        #expect(otherFailures.isEmpty, "only UNAVAILABLE while there is no master: \(otherFailures)")

        // No node restarted; both are on the new master.
        #expect((0..<2).map { cluster.node($0).process.pid } == pids)
        #expect((0..<2).allSatisfy { cluster.node($0).isRunning })
        #expect(try cluster.metric("rollcall_redis_connected") == 2)
        #expect(try cluster.metric("rollcall_redis_master_changes_total") == 2, "each node came back at the new master once")
        #expect(eventually(timeout: 5) { (try? cluster.metric("rollcall_cluster_nodes")) == 4 }, "each node sees both")

        // A join on node 2 reaches the member on node 1; a login works on either node.
        var carol: RollcallConnection?
        #expect(eventually(timeout: 10) {
            carol = try? cluster.session("carol", node: 1)
            return carol != nil
        })
        let carolJoined = try #require(carol).join("lobby")
        #expect(carolJoined.ok, "\(carolJoined)")
        // Alice learns of carol by her join event or, when her node resynced after the failover
        // (a gap in seq: PROTOCOL §9), by a fresh snapshot that lists her.
        let seen: Event
        do {
            seen = try alice.waitForEvent(timeout: .seconds(10)) { event in
                guard event.name == "presence", event["channel"]?.stringValue == "lobby" else { return false }
                if event.type == "join" { return event["publisher"]?.stringValue == "carol" }
                return event.type == "snapshot"
                    && (event["snapshot"]?.arrayValue ?? []).contains { $0["userId"]?.stringValue == "carol" }
            }
        } catch {
            Issue.record("alice on node 1 never learnt of carol's join on node 2: \(error); carol: \(carolJoined)\n\(cluster.describeNodes())\nreplica: \(replica.log.suffix(3000))")
            return
        }
        #expect(seen["occupancy"]?.numberValue?.intValue == 3, "alice and bob kept their membership: \(seen)")
        let dave = try cluster.session("dave", node: 0)
        #expect(try dave.request("ping").ok)

        // The server API answers from the new master on both nodes.
        for node in 0..<2 {
            let online = try ServerAPIRequest.ok(port: cluster.node(node).port, "getOnlineUsers", ["channel": "lobby"])
            #expect(online["users"]?.arrayValue?.compactMap { $0["userId"]?.stringValue }.sorted() == ["alice", "bob", "carol"], "n\(node + 1): \(online)")
        }
    }

    @Test("a manual failover demotes the master while it stays up: the nodes get READONLY, find the new master and go on, nothing lost, no restart")
    func followsADemotion() throws {
        let redis = try SentinelRedis()
        // The old master takes writes until the sentinels demote it, up to about a second
        // after the replica was promoted; they are lost. A loss longer than the node timeout
        // counts as Redis going back in time and closes every session with 1012
        // (`ClusterRollbackTests`), so the timeout here is well above that window.
        let config = BrokerProcess.merge(ServerAPIRequest.config, ["cluster": ["nodeTimeoutSeconds": 5]])
        let cluster = try ClusterProcess(config: config, nodeCount: 2, redis: redis.master, redisURL: redis.url)
        let pids = (0..<2).map { cluster.node($0).process.pid }
        let alice = try cluster.session("alice", node: 0)
        let bob = try cluster.session("bob", node: 1)
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby")["occupancy"]?.numberValue?.intValue == 2)
        #expect(try RedisWire.command(port: redis.master.port, ["WAIT", "1", "2000"]) == ":1")

        #expect(try RedisWire.command(port: redis.sentinels[0].port, ["SENTINEL", "FAILOVER", redis.name]) == "+OK")
        // The old master keeps running as a replica. Sentinel closes its clients' links when it
        // reconfigures it (CLIENT KILL); a write that reaches it first is answered READONLY.
        var round = 0
        var otherFailures: [String] = []
        let followed = eventually(timeout: 40) {
            round += 1
            if let reply = try? alice.channelOp("setState", "lobby", ["state": ["round": .string("\(round)")]]), !reply.ok,
               reply.errorCode != .unavailable {
                otherFailures.append("\(reply)")
            }
            return (try? RedisWire.command(port: redis.master.port, ["ROLE"])) == "*5"  // a replica's ROLE has 5 elements
                && (try? RedisWire.command(port: redis.replica.port, ["ROLE"])) == "*3"
                && (try? cluster.metric("rollcall_redis_master_changes_total")) == 2
                && (0..<2).allSatisfy { (try? RawHTTP.get(port: cluster.node($0).port, path: "/readyz").status) == 200 }
        }
        #expect(followed, "the nodes did not follow the demotion: \(cluster.describeNodes())\nsentinel: \(redis.sentinels[0].log.suffix(3000))")
        #expect(otherFailures.isEmpty, "only UNAVAILABLE while the master changes: \(otherFailures)")
        #expect((0..<2).map { cluster.node($0).process.pid } == pids)
        // The nodes' pub/sub links moved too (the demoted master forwards what the new one
        // publishes only while its replication link is up).
        func nodeSubscribers(port: Int) -> Int? {
            guard let list = try? RedisWire.bulk(port: port, ["CLIENT", "LIST"]) else { return nil }
            return list.split(separator: "\n").filter { $0.contains(" sub=") && !$0.contains(" sub=0 ") && !$0.contains("name=sentinel-") }.count
        }
        #expect(eventually(timeout: 10) { nodeSubscribers(port: redis.master.port) == 0 && nodeSubscribers(port: redis.replica.port) == 2 },
                "pub/sub links: \(nodeSubscribers(port: redis.master.port) ?? -1) on the demoted master, \(nodeSubscribers(port: redis.replica.port) ?? -1) on the new one")

        // Nothing was lost: a state change is heard across nodes, and both members are listed.
        #expect(eventually(timeout: 10) { (try? alice.channelOp("setState", "lobby", ["state": ["round": "final"]]).ok) == true },
                "\(cluster.describeNodes())\nsentinel: \(redis.sentinels[0].log.suffix(3000))")
        // Bob hears it as alice's stateChanged or, when his node resynced after moving its
        // pub/sub link to the new master (PROTOCOL §9), in a fresh snapshot.
        #expect(throws: Never.self) {
            try bob.waitForEvent(timeout: .seconds(10)) { event in
                guard event.name == "presence", event["channel"]?.stringValue == "lobby" else { return false }
                if event.type == "stateChanged" {
                    return event["publisher"]?.stringValue == "alice" && event["state"]?["round"]?.stringValue == "final"
                }
                return event.type == "snapshot" && (event["snapshot"]?.arrayValue ?? []).contains {
                    $0["userId"]?.stringValue == "alice" && $0["state"]?["round"]?.stringValue == "final"
                }
            }
        }
        for node in 0..<2 {
            let online = try ServerAPIRequest.ok(port: cluster.node(node).port, "getOnlineUsers", ["channel": "lobby"])
            #expect(online["users"]?.arrayValue?.compactMap { $0["userId"]?.stringValue }.sorted() == ["alice", "bob"], "n\(node + 1): \(online)")
        }
    }

    @Test("--check-config and the start refuse a malformed redis+sentinel:// or rediss+cluster:// URL, naming cluster.redis and never the password", arguments: [
        ("redis+sentinel://:hunter2@127.0.0.1:26379", "no /masterName"),
        ("redis+sentinel://:hunter2@127.0.0.1:0/m", "port"),
        ("rediss+sentinel://:hunter2@127.0.0.1:26379", "no /masterName"),
        ("rediss+cluster://:hunter2@127.0.0.1:7000/0", "a path (a Redis Cluster has only database 0)"),
    ])
    func refusesWhatItCannotUse(url: String, reason: String) throws {
        let config = BrokerProcess.merge(BrokerProcess.baseConfig, ["cluster": ["redis": url]])
        let configURL = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-redis-url-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: config).write(to: configURL)
        defer { try? FileManager.default.removeItem(at: configURL) }
        for arguments in [["--config", configURL.path, "--check-config"], ["--config", configURL.path, "--port", "0"]] {
            let result = try ExternalCommand.run(BrokerProcess.binary, arguments, timeout: 20)
            #expect(result.status == 1, "\(arguments.last!): exit \(result.status); stderr: \(result.stderr)")
            #expect(!result.stdout.contains("listening on") && !result.stdout.contains("configuration OK"))
            #expect(result.stderr.contains("cluster.redis") && result.stderr.contains(reason), "\(arguments.last!): \(result.stderr)")
            #expect(!result.stderr.contains("hunter2"), "the password never shows: \(result.stderr)")
        }
    }
}

/// A master, its replica and three sentinels on loopback, started and waited for until a
/// failover can happen; `url` is the nodes' `cluster.redis`.
private struct SentinelRedis {
    let master: RedisServer
    let replica: RedisServer
    let sentinels: [RedisSentinel]
    let name: String
    var url: String { "redis+sentinel://" + sentinels.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") + "/" + name }

    init() throws {
        let master = try RedisServer()
        let replica = try RedisServer(arguments: ["--replicaof", "127.0.0.1", String(master.port)])
        let name = "m" + UUID().uuidString.prefix(6).lowercased()
        let sentinels = try (0..<3).map { _ in try RedisSentinel(masterName: name, masterPort: master.port) }
        (self.master, self.replica, self.name, self.sentinels) = (master, replica, name, sentinels)
        // Failover needs the replica in sync and every sentinel knowing it and the two others.
        // In sync means its first full sync is done (`master_link_status:up`): `WAIT` counts a
        // replica still waiting for that sync's snapshot (Redis 7 delays a diskless one 5 s),
        // and a replica promoted then was seen to lack the cluster's keys (twice in full runs).
        let ready = eventually(timeout: 20) {
            (try? RedisWire.bulk(port: replica.port, ["INFO", "replication"]))?.contains("master_link_status:up") == true
                && (try? RedisWire.command(port: master.port, ["WAIT", "1", "100"])) == ":1"
                && sentinels.allSatisfy { sentinel in
                    (try? RedisWire.command(port: sentinel.port, ["SENTINEL", "replicas", name])) == "*1"
                        && (try? RedisWire.command(port: sentinel.port, ["SENTINEL", "sentinels", name])) == "*2"
                }
        }
        try #require(ready, "sentinels never saw the replica and each other: \(sentinels.first?.log.suffix(2000) ?? "")")
    }
}
