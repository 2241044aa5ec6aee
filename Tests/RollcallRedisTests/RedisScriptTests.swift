import Foundation
import RollcallEventLoop
import RollcallRedis
import RollcallTestSupport
import Testing

@Suite struct RedisScriptTests {
    /// Increments a hash field and returns the new value with the first argument.
    static let script = RedisScript("""
        local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
        return {seq, ARGV[1]}
        """)

    @Test func shaIsRedisOwn() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            #expect(try reply(connection, ["SCRIPT", "LOAD", Self.script.source], on: loop) == .bulk(Array(Self.script.sha1)))
            connection.close()
        }
    }

    @Test func fallsBackToEvalWhenRedisForgotTheScript() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            func run(_ argument: String) throws -> RedisReply {
                var outcome: Result<RedisReply, RedisError>?
                Self.script.run(on: connection, keys: ["channel:1"], arguments: [argument]) { outcome = $0 }
                try #require(loop.run(until: { outcome != nil }, timeout: patience))
                return try outcome!.get()
            }
            // Never loaded: NOSCRIPT, then EVAL (which caches it).
            #expect(try run("a") == .array([.integer(1), .bulk(Array("a"))]))
            #expect(try reply(connection, ["SCRIPT", "EXISTS", Self.script.sha1], on: loop) == .array([.integer(1)]))
            #expect(try run("b") == .array([.integer(2), .bulk(Array("b"))]))
            #expect(try reply(connection, ["SCRIPT", "FLUSH"], on: loop) == .status("OK"))
            #expect(try run("c") == .array([.integer(3), .bulk(Array("c"))]))
            connection.close()
        }
    }

    @Test func aScriptErrorIsAnErrorReply() throws {
        let redis = try RedisServer()
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop)
            var outcome: Result<RedisReply, RedisError>?
            RedisScript("return redis.call('NOSUCH')").run(on: connection) { outcome = $0 }
            #expect(loop.run(until: { outcome != nil }, timeout: patience))
            if case .failure(let error) = outcome {
                #expect(error.code == .errorReply)
                #expect(!error.message.hasPrefix("NOSCRIPT"))
            } else {
                Issue.record("expected an error reply, got \(String(describing: outcome))")
            }
            connection.close()
        }
    }
}
