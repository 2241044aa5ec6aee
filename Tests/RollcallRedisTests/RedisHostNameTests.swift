import Foundation
import RollcallEventLoop
@testable import RollcallRedis
import RollcallTestSupport
import Testing

/// A host name in `cluster.redis` is resolved off the loop, at every connect (PROTOCOL §9).
@Suite struct RedisHostNameTests {
    @Test func aHostNameIsResolvedAndHiredisGetsTheAddressAgainAtEveryReconnect() throws {
        let redis = try RedisServer(password: "pw")
        try EventLoop.withTestLoop { loop in
            let target = try RedisTarget(parsing: "redis://:pw@localhost:\(redis.port)/1")
            let timings = RedisTimings(timeoutSeconds: 2, initialBackoffSeconds: 0.01, maxBackoffSeconds: 0.05)
            let connection = RedisConnection(target: target, loop: loop, timings: timings, clientName: "named")
            let probe = SubscriberProbe(on: loop, publisher: connection, timings: timings)
            connection.start()
            probe.subscriber.subscribe("news")
            probe.subscriber.start()
            #expect(loop.run(until: { connection.state.isConnected && probe.resubscriptions == 1 }, timeout: patience),
                    "state \(connection.state), subscriber \(probe.subscriber.state)")
            #expect(["127.0.0.1", "::1"].contains(connection.address?.host), "hiredis was given \(connection.address.map { "\($0)" } ?? "nothing")")
            #expect(connection.address?.database == 1 && connection.address?.password == "pw")
            #expect(try reply(connection, ["SET", "k", "v"], on: loop) == .status("OK"))
            #expect(publishUntilReceived("hello", on: "news", via: connection, to: probe, loop: loop))

            // Both links are cut: they find the address again and come back.
            #expect(try redis.command(["CLIENT", "KILL", "TYPE", "normal"]).hasPrefix(":"))
            #expect(try redis.command(["CLIENT", "KILL", "TYPE", "pubsub"]).hasPrefix(":"))
            #expect(loop.run(until: { probe.resubscriptions == 2 && connection.state.isConnected }, timeout: patience))
            #expect(try reply(connection, ["GET", "k"], on: loop) == .bulk(Array("v")), "database 1 again")
            probe.subscriber.close()
            connection.close()
        }
    }

    @Test func aNameThatDoesNotResolveIsReportedAndRetried() throws {
        try EventLoop.withTestLoop { loop in
            let target = try RedisTarget(parsing: "redis://no-such-host.invalid:6379")
            let connection = RedisConnection(target: target, loop: loop, timings: RedisTimings(timeoutSeconds: 1))
            var reported: [RedisConnectionState] = []
            connection.onStateChange = { reported.append($0) }
            connection.start()
            #expect(loop.run(until: { !reported.isEmpty }, timeout: patience))
            guard case .disconnected(let reason) = reported.first else {
                Issue.record("expected disconnected, got \(reported)")
                connection.close()
                return
            }
            #expect(reason.code == .unresolved && reason.message.contains("no-such-host.invalid"))
            var outcome: Result<RedisReply, RedisError>?
            connection.send(["PING"]) { outcome = $0 }
            #expect(outcome.map { if case .failure(let error) = $0 { error.code == .unavailable } else { false } } == true)
            connection.close()
        }
    }
}
