import Foundation
import RollcallEventLoop
@testable import RollcallRedis
import RollcallTestSupport
import Testing

/// `+switch-master` (issue 30 item 7): a node subscribed to a sentinel's announcements follows a
/// failover at once, even idle — with no command of its own to meet a `READONLY` or a lost link.
@Suite struct SentinelSwitchTests {
    @Test func anIdleConnectionMovesToThePromotedReplicaBeforeItsNextCommand() throws {
        let master = try RedisServer()
        let replica = try RedisServer(arguments: ["--replicaof", "127.0.0.1", String(master.port)])
        let name = "m" + UUID().uuidString.prefix(6).lowercased()
        let sentinel = try RedisSentinel(masterName: name, masterPort: master.port, quorum: 1)
        let timings = RedisTimings(timeoutSeconds: 2, initialBackoffSeconds: 0.01, maxBackoffSeconds: 0.05)
        try EventLoop.withTestLoop { loop in
            // The replica in sync and known to the sentinel: a failover can happen.
            let toReplica = try connectedConnection(replica.endpoint(), on: loop)
            let toSentinel = try connectedConnection(RedisEndpoint(host: "127.0.0.1", port: sentinel.port), on: loop)
            var ready = false
            #expect(loop.run(until: {
                let sync = (try? reply(toReplica, ["INFO", "replication"], on: loop))?.text ?? ""
                let known = (try? reply(toSentinel, ["SENTINEL", "replicas", name], on: loop))?.elements?.count ?? 0
                ready = sync.contains("master_link_status:up") && known == 1
                return ready
            }, timeout: 20), "the sentinel never saw the replica in sync: \(sentinel.log.suffix(1500))")
            guard ready else { return }

            let target = try RedisTarget(parsing: "redis+sentinel://127.0.0.1:\(sentinel.port)/\(name)")
            let connection = RedisConnection(target: target, loop: loop, timings: timings)
            connection.start()
            #expect(loop.run(until: { connection.state.isConnected }, timeout: patience), "\(connection.state)")
            #expect(connection.address?.port == master.port)

            // A manual failover: the master stays up (demoted), so only the announcement tells
            // an idle connection. No command is sent on it until it moved.
            #expect(try reply(toSentinel, ["SENTINEL", "FAILOVER", name], on: loop) == .status("OK"))
            #expect(loop.run(until: { connection.state.isConnected && connection.address?.port == replica.port }, timeout: 20),
                    "still at \(connection.address.map { "\($0.address)" } ?? "nothing"): \(connection.state)\n\(sentinel.log.suffix(1500))")
            #expect(try reply(connection, ["SET", "k", "v"], on: loop) == .status("OK"), "the new master takes writes")
            connection.close()
            toReplica.close()
            toSentinel.close()
        }
    }
}
