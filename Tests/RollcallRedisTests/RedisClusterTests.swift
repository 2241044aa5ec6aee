import Foundation
@testable import RollcallRedis
import RollcallEventLoop
import RollcallTestSupport
import Testing

/// ``RedisClusterClient`` against a real Redis Cluster (3 masters, 3 replicas, started once for
/// the suite by ``SharedRedisCluster``): routing by slot, a slot migrated under it (ASK, then
/// MOVED), a master killed (UNAVAILABLE, then the promoted replica with no restart), and
/// ``RedisShardedSubscriber`` through both.
@Suite(.serialized, SharedRedisCluster())
struct RedisClusterTests {
    /// Short timings: a dead master is noticed and the map refreshed quickly.
    static let timings = RedisTimings(timeoutSeconds: 2, initialBackoffSeconds: 0.05, maxBackoffSeconds: 0.25)

    /// A client on `loop`, started and waited for until it is connected to every master.
    private func readyClient(_ cluster: RedisClusterNodes, on loop: EventLoop) throws -> RedisClusterClient {
        guard case .cluster(let seeds) = try RedisTarget(parsing: cluster.url) else { throw TestSupportError("not a cluster URL") }
        let client = RedisClusterClient(seeds: seeds, loop: loop, timings: Self.timings, clientName: "rollcall-test")
        client.start()
        try #require(loop.run(until: { client.isReady }, timeout: patience), "never ready: \(String(describing: client.map?.masters))")
        return client
    }

    /// A sharded subscriber on `client`, recording what it gets.
    private final class Shards {
        let subscriber: RedisShardedSubscriber
        var messages: [String: [String]] = [:]
        /// Each channel's (re)subscriptions, in order.
        var resubscribed: [String: Int] = [:]

        init(_ client: RedisClusterClient, on loop: EventLoop, channels: [String]) {
            subscriber = RedisShardedSubscriber(client: client, loop: loop, probeChannelPrefix: "rc:probe:", timings: RedisClusterTests.timings)
            subscriber.onMessage = { [unowned self] channel, payload in
                messages[String(decoding: channel, as: UTF8.self), default: []].append(String(decoding: payload, as: UTF8.self))
            }
            subscriber.onResubscribed = { [unowned self] channels in
                for channel in channels { resubscribed[String(decoding: channel, as: UTF8.self), default: 0] += 1 }
            }
            for channel in channels { subscriber.subscribe(channel) }
            subscriber.start()
        }
    }

    /// `SPUBLISH`es `payload` on each of `channels` and waits until each arrived at `shards`.
    private func publish(_ payload: String, on channels: [String], to shards: Shards, via client: RedisClusterClient, on loop: EventLoop) throws {
        for channel in channels {
            #expect(try call(client, ["SPUBLISH", channel, payload], keys: [channel], on: loop).get() == .integer(1), "\(channel): one subscriber")
        }
        let arrived = loop.run(until: { channels.allSatisfy { shards.messages[$0]?.last == payload } }, timeout: patience)
        #expect(arrived, "\(payload) did not reach every channel: \(shards.messages)")
    }

    /// Sends `arguments` routed by `keys` and turns the loop until the outcome.
    private func call(_ client: RedisClusterClient, _ arguments: [String], keys: [String], on loop: EventLoop) throws -> Result<RedisReply, RedisError> {
        var outcome: Result<RedisReply, RedisError>?
        client.send(arguments, keys: keys) { outcome = $0 }
        try #require(loop.run(until: { outcome != nil }, timeout: patience), "no outcome of \(arguments)")
        return outcome!
    }

    /// Sets `key` to "kept" and waits until a replica acknowledged the write (so a failover of
    /// its master keeps it); returns that master.
    private func writeKept(_ key: String, via client: RedisClusterClient, cluster: RedisClusterNodes, on loop: EventLoop) throws -> RedisHostPort {
        #expect(try call(client, ["SET", key, "kept"], keys: [key], on: loop).get() == .status("OK"))
        let master = try #require(client.map?.master(of: RedisClusterSlot.of(key)))
        #expect(try cluster.command(port: master.port, ["WAIT", "1", "2000"]) == "1")
        return master
    }

    @Test("keys of 300 hash tags land on all three masters and read back; EVALSHA and SPUBLISH are routed by key; keys of two slots are refused")
    func routesBySlot() throws {
        let cluster = try #require(SharedRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let client = try readyClient(cluster, on: loop)
            defer { client.close() }
            let map = try #require(client.map)
            #expect(map.masters.count == 3 && map.coversEverySlot)
            var written = 0
            for index in 0..<300 {
                client.send(["SET", "rc:{t:\(index)}:k", "v\(index)"], keys: ["rc:{t:\(index)}:k"]) { result in
                    if case .success(.status("OK")) = result { written += 1 } else { Issue.record("SET \(index): \(result)") }
                }
            }
            try #require(loop.run(until: { written == 300 }, timeout: patience), "\(written) of 300 written")
            let used = Set((0..<300).compactMap { map.master(of: RedisClusterSlot.of("t:\($0)")) })
            #expect(used.count == 3, "the keys went to \(used)")
            for master in map.masters {
                let size = try cluster.command(port: master.port, ["DBSIZE"])
                #expect((Int(size) ?? 0) > 0, "\(master) holds \(size) keys")
            }
            var read: [Int: String] = [:]
            for index in 0..<300 {
                client.send(["GET", "rc:{t:\(index)}:k"], keys: ["rc:{t:\(index)}:k"]) { read[index] = (try? $0.get())?.text ?? "\($0)" }
            }
            try #require(loop.run(until: { read.count == 300 }, timeout: patience))
            #expect((0..<300).allSatisfy { read[$0] == "v\($0)" })

            var scripted: Result<RedisReply, RedisError>?
            let script = RedisScript("return redis.call('GET', KEYS[1]) .. ARGV[1]")
            client.run(script, keys: [Array("rc:{t:7}:k".utf8)], arguments: [Array("!".utf8)]) { scripted = $0 }
            try #require(loop.run(until: { scripted != nil }, timeout: patience))
            #expect((try scripted?.get())?.text == "v7!")

            // Redis 7.0's sharded pub/sub is there (the engine's pub/sub plan, docs/cluster.md).
            let published = try call(client, ["SPUBLISH", "rc:{c:lobby}:events", "x"], keys: ["rc:{c:lobby}:events"], on: loop)
            #expect((try? published.get()) == .integer(0), "\(published)")

            let refused = try call(client, ["MGET", "foo", "bar"], keys: ["foo", "bar"], on: loop)
            #expect(throws: RedisError.self) { try refused.get() }
            if case .failure(let error) = refused { #expect(error.code == .crossSlot) }
            let keyless = try call(client, ["PING"], keys: [], on: loop)
            if case .failure(let error) = keyless { #expect(error.code == .noKey) } else { Issue.record("PING with no key: \(keyless)") }
        }
    }

    @Test("shard channels are subscribed with SSUBSCRIBE alone: each master lists its own among its shard channels, and no plain channel but the link's probe; one unsubscribed leaves its master's list")
    func subscribesShardChannelsOnly() throws {
        let cluster = try #require(SharedRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let client = try readyClient(cluster, on: loop)
            defer { client.close() }
            let map = try #require(client.map)
            let channels = (0..<12).map { "rc:{only:\($0)}:events" }
            let shards = Shards(client, on: loop, channels: channels)
            defer { shards.subscriber.close() }
            try #require(loop.run(until: { channels.allSatisfy { shards.resubscribed[$0] == 1 } }, timeout: patience), "never subscribed")
            try publish("hello", on: channels, to: shards, via: client, on: loop)
            func lines(_ port: Int, _ words: [String]) throws -> Set<String> {
                Set(try cluster.command(port: port, words).split(separator: "\n").map { String($0) })
            }
            for master in map.masters {
                let mine = Set(channels.filter { map.master(of: RedisClusterSlot.of($0)) == master })
                #expect(try lines(master.port, ["PUBSUB", "SHARDCHANNELS", "rc:{only:*"]) == mine, "\(master)")
                let plain = try lines(master.port, ["PUBSUB", "CHANNELS", "rc:*"])
                #expect(plain.allSatisfy { $0.hasPrefix("rc:probe:") } && plain.count <= 1, "\(master) has plain channels \(plain)")
            }
            let gone = channels[0], master = try #require(map.master(of: RedisClusterSlot.of(gone)))
            shards.subscriber.unsubscribe(gone)
            let left = loop.run(until: { (try? lines(master.port, ["PUBSUB", "SHARDCHANNELS", "rc:{only:*"]).contains(gone)) == false },
                                timeout: patience)
            #expect(left, "\(gone) is still a shard channel of \(master)")
        }
    }

    @Test("a slot migrated under the client is followed: ASK while it moves (the map unchanged), MOVED once it moved (the map updated), replies in send order; its shard channel is subscribed again on the target")
    func followsAMigratingSlot() throws {
        let cluster = try #require(SharedRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let client = try readyClient(cluster, on: loop)
            defer { client.close() }
            let key = "rc:{migrate}:old", slot = RedisClusterSlot.of(key)
            let source = try #require(client.map?.master(of: slot))
            let target = try #require(client.map?.masters.first { $0 != source })
            #expect(try call(client, ["SET", key, "before"], keys: [key], on: loop).get() == .status("OK"))
            let events = "rc:{migrate}:events"
            let shards = Shards(client, on: loop, channels: [events])
            defer { shards.subscriber.close() }
            try #require(loop.run(until: { shards.resubscribed[events] == 1 }, timeout: patience), "never subscribed")
            try publish("before the move", on: [events], to: shards, via: client, on: loop)

            let sourceID = try cluster.nodeID(port: source.port), targetID = try cluster.nodeID(port: target.port)
            #expect(try cluster.command(port: target.port, ["CLUSTER", "SETSLOT", "\(slot)", "IMPORTING", sourceID]) == "OK")
            #expect(try cluster.command(port: source.port, ["CLUSTER", "SETSLOT", "\(slot)", "MIGRATING", targetID]) == "OK")

            // A key the source does not hold is asked of the target (ASK), in order with the rest.
            var outcomes: [String] = []
            for (index, word) in ["a", "b", "c"].enumerated() {
                client.send(["SET", "rc:{migrate}:new", word], keys: ["rc:{migrate}:new"]) { outcomes.append("SET \(word) \((try? $0.get()) ?? .error("\($0)"))") }
                client.send(["GET", index == 1 ? key : "rc:{migrate}:new"], keys: [index == 1 ? key : "rc:{migrate}:new"]) {
                    outcomes.append("GET \((try? $0.get())?.text ?? "\($0)")")
                }
            }
            try #require(loop.run(until: { outcomes.count == 6 }, timeout: patience))
            #expect(outcomes == ["SET a status(\"OK\")", "GET a", "SET b status(\"OK\")", "GET before", "SET c status(\"OK\")", "GET c"], "\(outcomes)")
            #expect(client.map?.master(of: slot) == source, "ASK changes no map")
            // The source does not hold the new key: it sends whoever asks to the target.
            let asked = try cluster.command(port: source.port, ["GET", "rc:{migrate}:new"])
            #expect(asked == "ASK \(slot) 127.0.0.1:\(target.port)", "the new key was written on the target: \(asked)")

            #expect(try cluster.command(port: source.port, ["MIGRATE", "127.0.0.1", "\(target.port)", "", "0", "5000", "KEYS", key]) == "OK")
            for master in try cluster.masterPorts() {
                _ = try cluster.command(port: master, ["CLUSTER", "SETSLOT", "\(slot)", "NODE", targetID])
            }
            // The client still thinks the source serves the slot: MOVED, resent to the target.
            #expect(client.map?.master(of: slot) == source)
            #expect(try call(client, ["GET", key], keys: [key], on: loop).get().text == "before")
            #expect(client.map?.master(of: slot) == target, "MOVED updated the map")
            #expect(try call(client, ["GET", "rc:{migrate}:new"], keys: ["rc:{migrate}:new"], on: loop).get().text == "c")

            // The source pushed sunsubscribe when the slot left it: subscribed again on the target.
            let moved = loop.run(until: { shards.resubscribed[events] == 2 && shards.subscriber.isUp }, timeout: patience)
            #expect(moved, "the shard channel was not subscribed again: \(shards.resubscribed)")
            try publish("after the move", on: [events], to: shards, via: client, on: loop)
        }
    }

    @Test("kill -9 of a master: its slots answer UNAVAILABLE (or the lost link) meanwhile, never an error reply, then the promoted replica serves them with no restart; sharded pub/sub arrives before and after, its channels subscribed again (resubscribed)")
    func followsAFailover() throws {
        let cluster = try #require(SharedRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let client = try readyClient(cluster, on: loop)
            defer { client.close() }
            let key = "rc:{failover}:k", slot = RedisClusterSlot.of(key)
            // The write reached the replica before the kill (the replica is promoted with it).
            let victim = try writeKept(key, via: client, cluster: cluster, on: loop)
            let channels = (0..<24).map { "rc:{c:\($0)}:events" }
            let onVictim = channels.filter { client.map?.master(of: RedisClusterSlot.of($0)) == victim }
            try #require(!onVictim.isEmpty && onVictim.count < channels.count)
            let shards = Shards(client, on: loop, channels: channels)
            defer { shards.subscriber.close() }
            try #require(loop.run(until: { shards.subscriber.isUp && channels.allSatisfy { shards.resubscribed[$0] == 1 } }, timeout: patience),
                         "never subscribed: \(shards.resubscribed)")
            try publish("before", on: channels, to: shards, via: client, on: loop)
            let killedNode = try #require(cluster.node(port: victim.port))
            let started = Date()
            killedNode.kill()

            var failures: [RedisErrorCode: Int] = [:]
            var served: String?
            let deadline = Date().addingTimeInterval(30)
            while served == nil, Date() < deadline {
                switch try call(client, ["GET", key], keys: [key], on: loop) {
                case .success(let reply): served = reply.text ?? "\(reply)"
                case .failure(let error):
                    failures[error.code, default: 0] += 1
                    #expect([.unavailable, .connectionLost, .timeout].contains(error.code), "\(error)")
                    if error.code == .unavailable { #expect((error.retryAfterMs ?? 0) > 0, "\(error)") }
                    // Wait as an UNAVAILABLE answer tells a caller to (no fixed sleep: the hint).
                    let until = Date().addingTimeInterval(Double(error.retryAfterMs ?? 50) / 1000)
                    loop.run(until: { Date() >= until }, timeout: 1)
                }
            }
            let took = Date().timeIntervalSince(started)
            #expect(served == "kept", "after \(took) s; failures \(failures)")
            #expect(client.map?.master(of: slot) != victim && client.map?.masters.contains(victim) == false)
            #expect(failures[.unavailable, default: 0] > 0, "the slot answered UNAVAILABLE while its master was down: \(failures)")
            #expect(client.isReady || loop.run(until: { client.isReady }, timeout: patience))
            // The victim's channels are subscribed again on the promoted replica (resubscribed),
            // the others stayed where they were.
            let resubscribed = loop.run(until: { shards.subscriber.isUp && onVictim.allSatisfy { shards.resubscribed[$0] == 2 } }, timeout: patience)
            #expect(resubscribed, "\(shards.resubscribed)")
            #expect(channels.filter { !onVictim.contains($0) }.allSatisfy { shards.resubscribed[$0] == 1 }, "\(shards.resubscribed)")
            try publish("after", on: channels, to: shards, via: client, on: loop)
            print("RedisClusterTests: failover followed in \(String(format: "%.2f", took)) s (\(failures.map { "\($0.key.rawValue) ×\($0.value)" }.sorted().joined(separator: ", ")))")

            // Back as a replica of the promoted one, for the suites that follow.
            try killedNode.restart()
            try cluster.waitUntilHealthy(timeout: 30)
        }
    }

    @Test("a master killed and started again empty on its port after its replica was promoted: a client whose map had not caught up reads what was written (the promoted replica serves it), never the restarted node's empty slots")
    func aRestartedFormerMasterIsNotTrustedBeforeARefresh() throws {
        let cluster = try #require(SharedRedisCluster.current)
        try EventLoop.withTestLoop { loop in
            let client = try readyClient(cluster, on: loop)
            defer { client.close() }
            let key = "rc:{restarted}:k", slot = RedisClusterSlot.of(key)
            let victim = try writeKept(key, via: client, cluster: cluster, on: loop)
            // The client's loop does not turn from here until the old master is back: its map
            // still names the old master, as a node's did whose refresh lagged the failover.
            let killedNode = try #require(cluster.node(port: victim.port))
            let masters = try cluster.masterPorts().count
            killedNode.kill()
            try #require(cluster.waitUntilPromoted(replacing: victim.port, masters: masters), "the replica was not promoted")
            try killedNode.restart()

            var answers: [String] = []
            let deadline = Date().addingTimeInterval(20)
            while answers.last != "kept", Date() < deadline {
                switch try call(client, ["GET", key], keys: [key], on: loop) {
                case .success(let reply): answers.append(reply.text ?? "\(reply)")
                case .failure(let error):
                    #expect([.unavailable, .connectionLost, .timeout].contains(error.code), "\(error)")
                    let until = Date().addingTimeInterval(0.02)
                    loop.run(until: { Date() >= until }, timeout: 1)
                }
            }
            #expect(answers == ["kept"], "what the slot answered (the restarted empty node must answer nothing): \(answers)")
            #expect(client.map?.master(of: slot) != victim)
            try cluster.waitUntilHealthy(timeout: 30)
        }
    }
}

/// Starts one ``RedisClusterNodes`` for the suite it marks and stops it after the suite's last
/// test; the suite's tests read it from ``current`` (and, for a TLS cluster, its CA from
/// ``certificates``).
struct SharedRedisCluster: SuiteTrait, TestScoping {
    /// The cluster of the suite under way.
    @TaskLocal static var current: RedisClusterNodes?
    /// The certificates of the suite's TLS cluster (nil for a plain one).
    @TaskLocal static var certificates: TestCertificates?
    /// Replicas per master (each of 3 masters).
    var replicasPerMaster = 1
    /// True: every node also listens with TLS, signed by ``certificates``' CA (`tls-cluster yes`).
    var tls = false

    /// Runs the suite with a cluster started for it, and kills every node after its last test.
    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let certificates = tls ? try TestCertificates() : nil
        let cluster = try RedisClusterNodes(replicasPerMaster: replicasPerMaster, tls: certificates.map {
            RedisServer.TLS(certFile: $0.serverCert, keyFile: $0.serverKey, caFile: $0.caFile)
        })
        try await Self.$current.withValue(cluster) {
            try await Self.$certificates.withValue(certificates) { try await function() }
        }
        for node in cluster.nodes { node.kill() }
    }
}
