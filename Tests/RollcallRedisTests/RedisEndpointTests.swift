import Testing
@testable import RollcallRedis

@Suite struct RedisEndpointTests {
    @Test func parsesHostPortPasswordAndDatabase() throws {
        let endpoint = try RedisEndpoint(parsing: "redis://:s3cr%40t@redis.internal:6380/2")
        #expect(endpoint == RedisEndpoint(host: "redis.internal", port: 6380, password: "s3cr@t", database: 2))
        #expect(endpoint.description == "redis://:***@redis.internal:6380/2")
    }

    @Test func defaultsPortAndDatabase() throws {
        #expect(try RedisEndpoint(parsing: "redis://127.0.0.1") == RedisEndpoint(host: "127.0.0.1"))
        #expect(try RedisEndpoint(parsing: "redis://localhost:7000/") == RedisEndpoint(host: "localhost", port: 7000))
    }

    @Test func parsesAnACLUserAndAnIPv6Host() throws {
        let endpoint = try RedisEndpoint(parsing: "redis://node:pw@[::1]:7001/1")
        #expect(endpoint == RedisEndpoint(host: "::1", port: 7001, user: "node", password: "pw", database: 1))
    }

    @Test(arguments: [
        ("http://127.0.0.1:6379", "scheme"),
        ("redis://:6379", "no host"),
        ("redis://127.0.0.1:0", "port"),
        ("redis://127.0.0.1:http", "port"),
        ("redis://127.0.0.1:6379/x", "database"),
        ("redis://127.0.0.1:6379/-1", "database"),
        ("redis://password@127.0.0.1", "credentials"),
        ("redis://:bad%zz@127.0.0.1", "percent"),
        ("redis://[::1:6379", "unclosed"),
    ])
    func rejectsWithAClearError(url: String, mentioning word: String) {
        #expect {
            try RedisEndpoint(parsing: url)
        } throws: { error in
            guard let error = error as? RedisError else { return false }
            return error.code == .invalidEndpoint && error.message.contains(word)
        }
    }

    @Test func neverShowsThePasswordInAnError() {
        #expect {
            try RedisEndpoint(parsing: "redis://:hunter2@127.0.0.1:99999")
        } throws: { error in
            !"\(error)".contains("hunter2")
        }
    }
}
