@testable import RollcallRedis
import Testing

/// The pure parts of the Redis Cluster client: key slots, the slot map, redirections, the
/// cluster URL, reply order (no server).
struct RedisClusterRoutingTests {
    @Test("CRC16/XMODEM and the slots Redis' CLUSTER KEYSLOT gives")
    func slotsMatchRedis() {
        #expect(RedisClusterSlot.crc16(Array("123456789".utf8)[...]) == 0x31C3)
        #expect(RedisClusterSlot.of("foo") == 12182)
        #expect(RedisClusterSlot.of("bar") == 5061)
        #expect(RedisClusterSlot.of("") == 0)
        #expect(RedisClusterSlot.of([0xFF, 0x00, 0x7B]) == Int(RedisClusterSlot.crc16([0xFF, 0x00, 0x7B][...]) & 0x3FFF))
    }

    @Test("the hash tag: the bytes between the first { and the first } after it, when not empty", arguments: [
        ("{user1000}.following", "user1000"),
        ("rc:{c:lobby}:m", "c:lobby"),
        ("foo{bar}{zap}", "bar"),
        ("foo{{bar}}zap", "{bar"),
        ("foo{}{bar}", "foo{}{bar}"),
        ("foo{bar", "foo{bar"),
        ("foo}bar{", "foo}bar{"),
    ])
    func hashTags(key: String, hashed: String) {
        #expect(String(decoding: RedisClusterSlot.hashed(Array(key.utf8)), as: UTF8.self) == hashed)
    }

    @Test("keys under one tag share a slot; keys of two slots are refused with REDIS_CROSS_SLOT")
    func sharedSlot() throws {
        let keys = ["rc:{c:lobby}:m", "rc:{c:lobby}:seq", "rc:{c:lobby}:p"].map { Array($0.utf8) }
        #expect(try RedisClusterSlot.shared(by: keys) == RedisClusterSlot.of("c:lobby"))
        #expect(try RedisClusterSlot.shared(by: []) == nil)
        #expect {
            try RedisClusterSlot.shared(by: [Array("foo".utf8), Array("bar".utf8)])
        } throws: { error in
            (error as? RedisError)?.code == .crossSlot && "\(error)".contains("hash tag")
        }
    }

    @Test("the map from CLUSTER SLOTS: ranges, masters once each, an unknown host is the answering node's")
    func slotMap() throws {
        func node(_ host: String, _ port: Int64) -> RedisReply {
            .array([.bulk(Array(host.utf8)), .integer(port), .bulk(Array("id".utf8)), .array([])])
        }
        let reply = RedisReply.array([
            .array([.integer(0), .integer(5460), node("10.0.0.1", 7000), node("10.0.0.4", 7003)]),
            .array([.integer(5461), .integer(10922), node("?", 7001)]),
            .array([.integer(10923), .integer(16383), node("", 7002)]),
            .array([.integer(12000), .integer(12000), node("10.0.0.1", 7000)]),
        ])
        let answering = RedisHostPort(host: "10.0.0.9", port: 7001)
        let map = try RedisClusterSlotMap(clusterSlots: reply, answeredBy: answering)
        #expect(map.masters == [RedisHostPort(host: "10.0.0.1", port: 7000), RedisHostPort(host: "10.0.0.9", port: 7001), RedisHostPort(host: "10.0.0.9", port: 7002)])
        #expect(map.master(of: 0) == map.masters[0] && map.master(of: 5460) == map.masters[0])
        #expect(map.master(of: 5461) == map.masters[1] && map.master(of: 12000) == map.masters[0])
        #expect(map.slots(of: map.masters[2]) == [10923...11999, 12001...16383])
        #expect(map.coversEverySlot)
    }

    @Test("a map with a gap does not cover every slot; a master left with no slot drops out")
    func slotMapGapsAndMoves() throws {
        let a = RedisHostPort(host: "127.0.0.1", port: 1), b = RedisHostPort(host: "127.0.0.1", port: 2)
        var map = RedisClusterSlotMap()
        map.assign(0...100, to: a)
        #expect(!map.coversEverySlot && map.master(of: 101) == nil)
        map.assign(101...16383, to: b)
        #expect(map.coversEverySlot && map.masters == [a, b])
        map.assign(0...100, to: b)
        #expect(map.masters == [b] && map.master(of: 0) == b)
    }

    @Test("a malformed CLUSTER SLOTS answer is REDIS_PROTOCOL_VIOLATION", arguments: [
        RedisReply.status("OK"),
        .array([.array([.integer(0), .integer(16384), .array([.bulk(Array("h".utf8)), .integer(1)])])]),
        .array([.array([.integer(9), .integer(1), .array([.bulk(Array("h".utf8)), .integer(1)])])]),
        .array([.array([.integer(0), .integer(1), .array([.bulk(Array("h".utf8)), .integer(0)])])]),
        .array([.array([.integer(0), .integer(1)])]),
    ])
    func malformedSlots(reply: RedisReply) {
        #expect {
            try RedisClusterSlotMap(clusterSlots: reply, answeredBy: RedisHostPort(host: "h", port: 1))
        } throws: { ($0 as? RedisError)?.code == .protocolViolation }
    }

    @Test("MOVED and ASK name a slot and a node; other errors are no redirection")
    func redirects() {
        let by = RedisHostPort(host: "10.0.0.9", port: 7000)
        #expect(RedisClusterRedirect(errorLine: "MOVED 3999 127.0.0.1:6381", answeredBy: by) == .moved(slot: 3999, to: RedisHostPort(host: "127.0.0.1", port: 6381)))
        #expect(RedisClusterRedirect(errorLine: "ASK 3999 :6381", answeredBy: by) == .ask(slot: 3999, to: RedisHostPort(host: "10.0.0.9", port: 6381)))
        #expect(RedisClusterRedirect(errorLine: "MOVED 1 [::1]:7001", answeredBy: by) == .moved(slot: 1, to: RedisHostPort(host: "::1", port: 7001)))
        for line in ["TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down",
                     "MOVED 16384 127.0.0.1:1", "MOVED x 127.0.0.1:1", "ERR MOVED", "ASK 1 127.0.0.1:0"] {
            #expect(RedisClusterRedirect(errorLine: line, answeredBy: by) == nil, "\(line)")
        }
    }

    @Test("redis+cluster:// parses into seeds with credentials (port 6379 by default), never showing the password")
    func clusterURL() throws {
        let target = try RedisTarget(parsing: "redis+cluster://app:s%40cret@10.0.0.1:7000,[::1],node-3:7002/")
        guard case .cluster(let seeds) = target else {
            Issue.record("not a cluster target: \(target)")
            return
        }
        #expect(seeds.seeds == [RedisHostPort(host: "10.0.0.1", port: 7000), RedisHostPort(host: "::1", port: 6379), RedisHostPort(host: "node-3", port: 7002)])
        #expect(seeds.user == "app" && seeds.password == "s@cret")
        #expect(seeds.node(at: seeds.seeds[2]) == RedisEndpoint(host: "node-3", port: 7002, user: "app", password: "s@cret"))
        #expect(target.description == "redis+cluster://app:***@10.0.0.1:7000,[::1]:6379,node-3:7002")
        #expect(!target.isSentinel && !target.usesTLS && !seeds.tls)
    }

    @Test("rediss+cluster:// parses into seeds over TLS: every node's endpoint is TLS, checked against the host as the URL or the slot map names it")
    func tlsClusterURL() throws {
        let target = try RedisTarget(parsing: "REDISS+CLUSTER://:s3cret@redis-0.internal:6380,10.0.0.2:6380")
        guard case .cluster(let seeds) = target else {
            Issue.record("not a cluster target: \(target)")
            return
        }
        #expect(seeds.tls && target.usesTLS && seeds.password == "s3cret")
        #expect(seeds.seeds == [RedisHostPort(host: "redis-0.internal", port: 6380), RedisHostPort(host: "10.0.0.2", port: 6380)])
        #expect(target.description == "rediss+cluster://:***@redis-0.internal:6380,10.0.0.2:6380")
        // A seed by name: resolved, its name kept for the certificate check; a master as
        // CLUSTER SLOTS announces it (an address, or a host name with cluster-announce-hostname).
        let seed = seeds.node(at: seeds.seeds[0])
        #expect(seed.tls && seed.host == "redis-0.internal" && seed.password == "s3cret")
        #expect(seed.at(RedisHostPort(host: "10.0.0.1", port: 6380)).namedHost == "redis-0.internal")
        let master = seeds.node(at: RedisHostPort(host: "10.0.0.3", port: 6380))
        #expect(master.tls && master.at(RedisHostPort(host: "10.0.0.3", port: 6380)).namedHost == nil)
    }

    @Test("a malformed redis+cluster:// URL is REDIS_INVALID_ENDPOINT naming what is wrong", arguments: [
        ("redis+cluster://:pw@127.0.0.1:7000/0", "path"),
        ("redis+cluster://127.0.0.1:7000,", "no host"),
        ("redis+cluster://127.0.0.1:70000", "port"),
        ("redis+cluster://pw@127.0.0.1:7000", "credentials"),
        ("rediss+cluster://:pw@127.0.0.1:7000/2", "path"),
        ("rediss+cluster://", "no host"),
    ])
    func malformedClusterURL(url: String, word: String) {
        #expect {
            try RedisTarget(parsing: url)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .invalidEndpoint && error.message.contains(word) && !error.message.contains("pw@")
        }
    }

    @Test("outcomes are handed back in send order per slot, whatever order they arrive in")
    func replyOrder() {
        let order = RedisClusterReplyOrder()
        var handed: [String] = []
        let first = order.issue(slot: 7) { _ in handed.append("first") }
        let second = order.issue(slot: 7) { _ in handed.append("second") }
        let other = order.issue(slot: 8) { _ in handed.append("other") }
        order.settle(second, .success(.status("OK")))
        order.settle(other, .success(.status("OK")))
        #expect(handed == ["other"])
        order.settle(first, .failure(RedisError(.unavailable, "down")))
        #expect(handed == ["other", "first", "second"] && order.waiting == 0)
    }
}
