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

    @Test(arguments: [
        ("rediss://:pw@127.0.0.1:6380", "TLS"),
        ("rediss+sentinel://127.0.0.1:26379/m", "TLS"),
        ("rediss+cluster://127.0.0.1:7000", "TLS"),
    ])
    func refusesWhatThisBuildDoesNotSpeakYet(url: String, mentioning word: String) {
        #expect {
            try RedisTarget(parsing: url)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .unsupportedEndpoint && error.message.contains(word) && error.message.contains("not supported yet")
                && !error.message.contains("pw")
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
