import Testing
@testable import RollcallRedis

/// `cluster.redis` parsed into a ``RedisTarget`` (PROTOCOL §9, "Which Redis").
@Suite struct RedisTargetTests {
    @Test func aRedisURLIsOneServer() throws {
        #expect(try RedisTarget(parsing: "redis://:pw@redis.internal:6380/2")
                == .server(RedisEndpoint(host: "redis.internal", port: 6380, password: "pw", database: 2)))
        #expect(!(try RedisTarget(parsing: "redis://127.0.0.1")).isSentinel)
    }

    @Test func aSentinelURLNamesTheSentinelsTheMasterAndItsCredentials() throws {
        let target = try RedisTarget(parsing: "redis+sentinel://app:s%40cret@s1.internal:26380,[::1],10.0.0.3:5000/my-master/3")
        let expected = RedisSentinelSet(
            sentinels: [RedisHostPort(host: "s1.internal", port: 26380), RedisHostPort(host: "::1", port: 26379),
                        RedisHostPort(host: "10.0.0.3", port: 5000)],
            masterName: "my-master", user: "app", password: "s@cret", database: 3)
        #expect(target == .sentinel(expected))
        #expect(target.isSentinel)
        #expect(target.description == "redis+sentinel://app:***@s1.internal:26380,[::1]:26379,10.0.0.3:5000/my-master/3")
        #expect(expected.master(at: RedisHostPort(host: "10.0.0.9", port: 6379))
                == RedisEndpoint(host: "10.0.0.9", port: 6379, user: "app", password: "s@cret", database: 3))
    }

    @Test func aSentinelURLWithoutCredentialsOrDatabase() throws {
        #expect(try RedisTarget(parsing: "REDIS+SENTINEL://127.0.0.1:26379/mymaster")
                == .sentinel(RedisSentinelSet(sentinels: [RedisHostPort(host: "127.0.0.1", port: 26379)], masterName: "mymaster")))
        #expect(try RedisTarget(parsing: "redis+sentinel://a,b/m/") == .sentinel(RedisSentinelSet(
            sentinels: [RedisHostPort(host: "a", port: 26379), RedisHostPort(host: "b", port: 26379)], masterName: "m")))
    }

    @Test(arguments: [
        ("redis+sentinel://127.0.0.1:26379", "no /masterName"),
        ("redis+sentinel://127.0.0.1:26379/", "no master name"),
        ("redis+sentinel://127.0.0.1:26379//0", "no master name"),
        ("redis+sentinel://127.0.0.1:26379,/m", "no host"),
        ("redis+sentinel:///m", "no host"),
        ("redis+sentinel://127.0.0.1:0/m", "port"),
        ("redis+sentinel://127.0.0.1:26379/m/x", "database"),
        ("redis+sentinel://127.0.0.1:26379/a%20b", "space"),
        ("redis+sentinel://pw@127.0.0.1:26379/m", "credentials"),
        ("http://127.0.0.1:6379", "scheme"),
        ("redis:/127.0.0.1", "scheme"),
    ])
    func rejectsAMalformedURL(url: String, mentioning word: String) {
        #expect {
            try RedisTarget(parsing: url)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .invalidEndpoint && error.message.contains(word)
        }
    }

    @Test func aRedissURLIsOneServerOverTLS() throws {
        let target = try RedisTarget(parsing: "REDISS://app:pw@redis.internal:6380/2")
        #expect(target == .server(RedisEndpoint(host: "redis.internal", port: 6380, user: "app", password: "pw", database: 2, tls: true)))
        #expect(target.usesTLS && !target.isSentinel)
        #expect(target.description == "rediss://app:***@redis.internal:6380/2")
        #expect(try RedisTarget(parsing: "rediss://[::1]") == .server(RedisEndpoint(host: "::1", tls: true)))
        #expect(!(try RedisTarget(parsing: "redis://127.0.0.1")).usesTLS)
    }

    @Test func aRedissSentinelURLReachesTheSentinelsAndTheMasterOverTLS() throws {
        let target = try RedisTarget(parsing: "rediss+sentinel://:pw@s1.internal,s2.internal:5000/mymaster/1")
        let set = RedisSentinelSet(sentinels: [RedisHostPort(host: "s1.internal", port: 26379), RedisHostPort(host: "s2.internal", port: 5000)],
                                   masterName: "mymaster", password: "pw", database: 1, tls: true)
        #expect(target == .sentinel(set))
        #expect(target.usesTLS && target.isSentinel)
        #expect(target.description == "rediss+sentinel://:***@s1.internal:26379,s2.internal:5000/mymaster/1")
        #expect(set.master(at: RedisHostPort(host: "10.0.0.9", port: 6379)).tls)
    }

    @Test func theHostAsNamedIsKeptForTheCertificateCheckOnceResolved() throws {
        let endpoint = try RedisEndpoint(parsing: "rediss://redis.internal:6380")
        let resolved = endpoint.at(RedisHostPort(host: "10.0.0.7", port: 6380))
        #expect(resolved.host == "10.0.0.7" && resolved.namedHost == "redis.internal" && resolved.tls)
        #expect(resolved.at(RedisHostPort(host: "10.0.0.8", port: 6380)).namedHost == "redis.internal")
        #expect(try RedisEndpoint(parsing: "rediss://10.0.0.7").at(RedisHostPort(host: "10.0.0.7", port: 6379)).namedHost == nil)
    }

    @Test func anUnknownSchemeIsInvalidNamingEverySchemeSpoken() {
        #expect {
            try RedisTarget(parsing: "redis+shard://:pw@127.0.0.1:7000")
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .invalidEndpoint && error.message.contains("rediss+cluster://") && !error.message.contains("pw@")
        }
    }

    @Test func neverShowsThePasswordInAnError() {
        #expect {
            try RedisTarget(parsing: "redis+sentinel://u:hunter2@127.0.0.1:99999/m")
        } throws: { error in
            !"\(error)".contains("hunter2") && "\(error)".contains("***")
        }
    }
}
