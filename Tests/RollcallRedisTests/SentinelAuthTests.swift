import Foundation
import RollcallEventLoop
@testable import RollcallRedis
import RollcallTestSupport
import Testing

/// Sentinels that require a password (`requirepass` in sentinel.conf): a sentinel that answers
/// `NOAUTH` is asked again after `AUTH` with the URL's credentials (docs/cluster.md, "Redis
/// with Sentinel"); one that needs none never gets `AUTH`.
@Suite struct SentinelAuthTests {
    private let timings = RedisTimings(timeoutSeconds: 2, initialBackoffSeconds: 0.01, maxBackoffSeconds: 0.05)

    @Test func aSentinelThatRequiresThePasswordIsAskedWithTheURLsCredentials() throws {
        let master = try RedisServer(password: "pw")
        let name = "m" + UUID().uuidString.prefix(6).lowercased()
        let sentinel = try RedisSentinel(masterName: name, masterPort: master.port, masterPassword: "pw", password: "pw", quorum: 1)
        try EventLoop.withTestLoop { loop in
            let target = try RedisTarget(parsing: "redis+sentinel://:pw@127.0.0.1:\(sentinel.port)/\(name)")
            let connection = RedisConnection(target: target, loop: loop, timings: timings)
            connection.start()
            #expect(loop.run(until: { connection.state.isConnected }, timeout: patience), "\(connection.state)\n\(sentinel.log.suffix(1500))")
            #expect(connection.address?.port == master.port)
            #expect(try reply(connection, ["SET", "k", "v"], on: loop) == .status("OK"))
            connection.close()
        }
    }

    @Test func withoutCredentialsTheSentinelsNOAUTHIsTheReason() throws {
        let master = try RedisServer()
        let name = "m" + UUID().uuidString.prefix(6).lowercased()
        let sentinel = try RedisSentinel(masterName: name, masterPort: master.port, password: "pw", quorum: 1)
        try EventLoop.withTestLoop { loop in
            let target = try RedisTarget(parsing: "redis+sentinel://127.0.0.1:\(sentinel.port)/\(name)")
            let connection = RedisConnection(target: target, loop: loop, timings: timings)
            var failures: [RedisError] = []
            connection.onLinkFailure = { failures.append($0) }
            connection.start()
            #expect(loop.run(until: { !failures.isEmpty }, timeout: patience))
            #expect(failures.first?.code == .masterNotFound && failures.first?.message.contains("NOAUTH") == true,
                    "\(failures.first.map { "\($0)" } ?? "none")")
            connection.close()
        }
    }

    @Test func aSentinelWithoutAPasswordIsAskedWithoutAUTH() throws {
        let master = try RedisServer(password: "pw")
        let name = "m" + UUID().uuidString.prefix(6).lowercased()
        let sentinel = try RedisSentinel(masterName: name, masterPort: master.port, masterPassword: "pw", quorum: 1)
        try EventLoop.withTestLoop { loop in
            let target = try RedisTarget(parsing: "redis+sentinel://:pw@127.0.0.1:\(sentinel.port)/\(name)")
            let connection = RedisConnection(target: target, loop: loop, timings: timings)
            connection.start()
            #expect(loop.run(until: { connection.state.isConnected }, timeout: patience), "\(connection.state)")
            connection.close()
            // The sentinel never saw an AUTH: it would have answered it with an error ("called
            // without any password configured"), and it answered none (a sentinel's INFO has no
            // command statistics).
            let direct = try connectedConnection(RedisEndpoint(host: "127.0.0.1", port: sentinel.port), on: loop)
            let stats = try reply(direct, ["INFO", "stats"], on: loop).text ?? ""
            #expect(stats.contains("total_error_replies:0"), "\(stats)")
            direct.close()
        }
    }
}
