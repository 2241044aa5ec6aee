import Foundation
@testable import RollcallRedis
import RollcallEventLoop
import RollcallTestSupport
import Testing

/// `rediss+cluster://` against a real Redis Cluster over TLS (3 masters, no replicas, each
/// node with a TLS port and `tls-cluster yes`, certificates from a CA the test makes; started
/// once for the suite by ``SharedRedisCluster``): ``RedisClusterClient`` and
/// ``RedisShardedSubscriber`` open every link with `cluster.tls`, and a certificate that does
/// not verify is refused.
@Suite(.serialized, SharedRedisCluster(replicasPerMaster: 0, tls: true))
struct RedisClusterTLSTests {
    /// Short timings, and a probe round every 0.1 s so a few pass quickly.
    static let timings = RedisTimings(timeoutSeconds: 2, initialBackoffSeconds: 0.05, maxBackoffSeconds: 0.25, probeIntervalSeconds: 0.1)

    /// A started client for the cluster's `rediss+cluster://` URL with `settings`.
    private func client(_ cluster: RedisClusterNodes, _ settings: RedisTLSSettings, on loop: EventLoop) throws -> RedisClusterClient {
        let url = try #require(cluster.tlsURL)
        guard case .cluster(let seeds) = try RedisTarget(parsing: url) else { throw TestSupportError("not a cluster URL: \(url)") }
        let client = RedisClusterClient(seeds: seeds, loop: loop, timings: Self.timings, clientName: "rollcall-tls-test",
                                        tls: try RedisTLSContext(settings: settings))
        client.start()
        return client
    }

    /// Runs `body` with a client of the shared TLS cluster that trusts the test CA, once it is
    /// connected to every master.
    private func withReadyClient(_ body: (RedisClusterNodes, RedisClusterClient, EventLoop) throws -> Void) throws {
        let cluster = try #require(SharedRedisCluster.current)
        let certificates = try #require(SharedRedisCluster.certificates)
        try EventLoop.withTestLoop { loop in
            let client = try client(cluster, RedisTLSSettings(caFile: certificates.caFile), on: loop)
            defer { client.close() }
            try #require(loop.run(until: { client.isReady }, timeout: patience), "never ready: \(String(describing: client.lastRefreshError))")
            try body(cluster, client, loop)
        }
    }

    /// Sends `arguments` routed by `keys` and turns the loop until the outcome.
    private func call(_ client: RedisClusterClient, _ arguments: [String], keys: [String], on loop: EventLoop) throws -> Result<RedisReply, RedisError> {
        var outcome: Result<RedisReply, RedisError>?
        client.send(arguments, keys: keys) { outcome = $0 }
        try #require(loop.run(until: { outcome != nil }, timeout: patience), "no outcome of \(arguments)")
        return outcome!
    }

    @Test("rediss+cluster://: the slot map names the TLS ports; keys of 60 hash tags land on all three masters and read back, and a script runs, over TLS")
    func routesOverTLS() throws {
        try withReadyClient { cluster, client, loop in
            let map = try #require(client.map)
            let tlsPorts = Set(cluster.nodes.compactMap(\.tlsPort))
            #expect(map.masters.count == 3 && map.masters.allSatisfy { tlsPorts.contains($0.port) }, "the masters as a TLS client sees them: \(map.masters)")
            var written = 0
            for index in 0..<60 {
                client.send(["SET", "tls:{t:\(index)}:k", "v\(index)"], keys: ["tls:{t:\(index)}:k"]) { result in
                    if case .success(.status("OK")) = result { written += 1 } else { Issue.record("SET \(index): \(result)") }
                }
            }
            try #require(loop.run(until: { written == 60 }, timeout: patience), "\(written) of 60 written")
            #expect(Set((0..<60).compactMap { map.master(of: RedisClusterSlot.of("t:\($0)")) }).count == 3)
            for master in map.masters {
                let plainPort = try #require(cluster.node(port: master.port)?.port)
                let size = try cluster.command(port: plainPort, ["DBSIZE"])
                #expect((Int(size) ?? 0) > 0, "\(master) holds \(size) keys")
            }
            var read: [Int: String] = [:]
            for index in 0..<60 {
                client.send(["GET", "tls:{t:\(index)}:k"], keys: ["tls:{t:\(index)}:k"]) { read[index] = (try? $0.get())?.text ?? "\($0)" }
            }
            try #require(loop.run(until: { read.count == 60 }, timeout: patience))
            #expect((0..<60).allSatisfy { read[$0] == "v\($0)" })
            var scripted: Result<RedisReply, RedisError>?
            client.run(RedisScript("return redis.call('GET', KEYS[1]) .. ARGV[1]"), keys: [Array("tls:{t:7}:k".utf8)], arguments: [Array("!".utf8)]) { scripted = $0 }
            try #require(loop.run(until: { scripted != nil }, timeout: patience))
            #expect((try scripted?.get())?.text == "v7!")
        }
    }

    @Test("rediss+cluster://: the sharded subscriber's TLS links get messages on every master, and their probes (PUBLISH through each master's TLS connection) keep them up")
    func shardedPubSubOverTLS() throws {
        try withReadyClient { cluster, client, loop in
            let masters = try #require(client.map?.masters)
            let channels = (0..<12).map { "tls:{c:\($0)}:events" }
            #expect(Set(channels.compactMap { client.map?.master(of: RedisClusterSlot.of($0)) }).count == 3)
            // Probes are plain PUBLISHes; the test's own messages are SPUBLISHes.
            let probesBefore = try masters.map { try probeCount(cluster, master: $0) }

            let subscriber = RedisShardedSubscriber(client: client, loop: loop, probeChannelPrefix: "tls:probe:", timings: Self.timings)
            defer { subscriber.close() }
            var messages: [String: [String]] = [:]
            var resubscribed: [String: Int] = [:]
            subscriber.onMessage = { channel, payload in
                messages[String(decoding: channel, as: UTF8.self), default: []].append(String(decoding: payload, as: UTF8.self))
            }
            subscriber.onResubscribed = { for channel in $0 { resubscribed[String(decoding: channel, as: UTF8.self), default: 0] += 1 } }
            for channel in channels { subscriber.subscribe(channel) }
            subscriber.start()
            try #require(loop.run(until: { subscriber.isUp && channels.allSatisfy { resubscribed[$0] == 1 } }, timeout: patience),
                         "never subscribed: \(resubscribed)")

            for channel in channels {
                #expect(try call(client, ["SPUBLISH", channel, "hello"], keys: [channel], on: loop).get() == .integer(1), "\(channel): one subscriber")
            }
            let arrived = loop.run(until: { channels.allSatisfy { messages[$0] == ["hello"] } }, timeout: patience)
            #expect(arrived, "not every channel got its message: \(messages)")

            // Five probe rounds answered on each master's link, none of them taken down.
            var probes: [Int] = []
            let probed = loop.run(until: {
                probes = masters.map { (try? probeCount(cluster, master: $0)) ?? 0 }
                return zip(probes, probesBefore).allSatisfy { $0 - $1 >= 5 }
            }, timeout: patience)
            #expect(probed, "probe PUBLISHes per master: \(probesBefore) → \(probes)")
            #expect(subscriber.isUp && channels.allSatisfy { resubscribed[$0] == 1 }, "a link went down: \(resubscribed)")
        }
    }

    @Test("rediss+cluster:// with another CA's certificate, or a serverName the certificate does not carry: no slot map, the refresh names REDIS_TLS_VERIFY_FAILED, a command answers REDIS_UNAVAILABLE with retryAfterMs")
    func refusesACertificateThatDoesNotVerify() throws {
        let cluster = try #require(SharedRedisCluster.current)
        let certificates = try #require(SharedRedisCluster.certificates)
        for settings in [RedisTLSSettings(caFile: certificates.otherCAFile),
                         RedisTLSSettings(caFile: certificates.caFile, serverName: "redis.example.com")] {
            try EventLoop.withTestLoop { loop in
                let client = try client(cluster, settings, on: loop)
                defer { client.close() }
                let refused = loop.run(until: { client.lastRefreshError?.message.contains("REDIS_TLS_VERIFY_FAILED") == true }, timeout: patience)
                #expect(refused, "\(settings): \(String(describing: client.lastRefreshError))")
                #expect(client.map == nil && !client.isReady)
                let outcome = try call(client, ["GET", "tls:k"], keys: ["tls:k"], on: loop)
                guard case .failure(let error) = outcome else {
                    Issue.record("\(settings): answered \(outcome)")
                    return
                }
                #expect(error.code == .unavailable && (error.retryAfterMs ?? 0) > 0, "\(error)")
            }
        }
    }

    @Test("a rediss+cluster:// target's links check the host as named, or cluster.tls.serverName; a plain cluster's links use no TLS")
    func checksTheHostAsNamed() throws {
        let certificates = try #require(SharedRedisCluster.certificates)
        let context = try RedisTLSContext(settings: RedisTLSSettings(caFile: certificates.caFile))
        guard case .cluster(let seeds) = try RedisTarget(parsing: "rediss+cluster://redis-0.internal:6380") else { throw TestSupportError("not a cluster") }
        guard case .cluster(let plain) = try RedisTarget(parsing: "redis+cluster://127.0.0.1:7000") else { throw TestSupportError("not a cluster") }
        try EventLoop.withTestLoop { loop in
            let client = RedisClusterClient(seeds: seeds, loop: loop, tls: context)
            let plainClient = RedisClusterClient(seeds: plain, loop: loop, tls: context)
            let locator = RedisLocator(target: .server(seeds.node(at: seeds.seeds[0])), loop: loop, timeoutSeconds: 1, tls: client.tls)
            defer {
                locator.close()
                client.close()
                plainClient.close()
            }
            #expect(client.tls === context)
            // Once the name is resolved, the link still checks the name.
            let resolved = seeds.node(at: seeds.seeds[0]).at(RedisHostPort(host: "10.0.0.1", port: 6380))
            #expect(try locator.tlsLink(for: resolved)?.serverName == "redis-0.internal")
            let named = try RedisTLSContext(settings: RedisTLSSettings(caFile: certificates.caFile, serverName: "redis.example.com"))
            #expect(named.link(to: resolved.namedHost ?? resolved.host).serverName == "redis.example.com")
            #expect(plainClient.tls == nil && !plain.node(at: plain.seeds[0]).tls)
        }
    }

    /// The `PUBLISH` calls `master` (as a TLS client sees it) has served: the probes' rounds.
    private func probeCount(_ cluster: RedisClusterNodes, master: RedisHostPort) throws -> Int {
        guard let node = cluster.node(port: master.port) else { throw TestSupportError("no node at \(master)") }
        let stats = try cluster.command(port: node.port, ["INFO", "commandstats"])
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_publish:") }) else { return 0 }
        let calls = line.split(separator: ",").first { $0.contains("calls=") }?.split(separator: "=").last
        return calls.flatMap { Int($0) } ?? 0
    }
}
