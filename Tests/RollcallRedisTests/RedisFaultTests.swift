import Foundation
import RollcallEventLoop
import RollcallRedis
import RollcallTestSupport
import Testing

@Suite struct RedisFaultTests {
    @Test func theWatchdogFailsPendingCommandsWhenRedisStopsAnswering() throws {
        let redis = try RedisServer()
        let timings = RedisTimings(timeoutSeconds: 0.5, initialBackoffSeconds: 0.05, maxBackoffSeconds: 0.5)
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop, timings: timings)
            var states: [RedisConnectionState] = []
            connection.onStateChange = { states.append($0) }

            redis.suspend()
            let outcomes = Outcomes()
            for index in 0..<5 { connection.send(["SET", "k\(index)", "v"], completion: outcomes.record) }
            let sent = Date()
            #expect(loop.run(until: { outcomes.count == 5 }, timeout: patience))
            let waited = Date().timeIntervalSince(sent)
            for result in outcomes.results {
                if case .failure(let error) = result { #expect(error.code == .timeout) } else { Issue.record("expected a timeout, got \(result)") }
            }
            #expect(waited >= 0.3, "failed long before the timeout: \(waited) s")
            guard case .disconnected(let reason)? = states.first else {
                Issue.record("expected disconnected, got \(states)")
                redis.resume()
                return
            }
            #expect(reason.code == .timeout)

            // Down: new commands fail at once, with a retry hint.
            var immediate: Result<RedisReply, RedisError>?
            connection.send(["PING"]) { immediate = $0 }
            if case .failure(let error)? = immediate {
                #expect(error.code == .unavailable)
                #expect(error.retryAfterMs != nil)
            } else {
                Issue.record("expected an immediate unavailable, got \(String(describing: immediate))")
            }

            redis.resume()
            #expect(loop.run(until: { states.last == .connected }, timeout: patience))
            #expect(try reply(connection, ["PING"], on: loop) == .status("PONG"))
            connection.close()
        }
    }

    @Test func reconnectsAfterRedisIsKilledAndRestarted() throws {
        let redis = try RedisServer()
        let timings = RedisTimings(timeoutSeconds: 1, initialBackoffSeconds: 0.05, maxBackoffSeconds: 0.3, probeIntervalSeconds: 0.2)
        try EventLoop.withTestLoop { loop in
            let connection = try connectedConnection(redis.endpoint(), on: loop, timings: timings)
            let probe = SubscriberProbe(on: loop, publisher: connection, timings: timings)
            probe.subscriber.subscribe("room")
            probe.subscriber.start()
            #expect(loop.run(until: { probe.resubscriptions == 1 }, timeout: patience))
            var states: [RedisConnectionState] = []
            connection.onStateChange = { states.append($0) }
            #expect(try reply(connection, ["SET", "before", "1"], on: loop) == .status("OK"))

            redis.kill()
            #expect(loop.run(until: { !states.isEmpty && !probe.subscriber.state.isConnected }, timeout: patience))
            if case .disconnected(let reason)? = states.first {
                #expect(reason.code == .connectionLost)
            } else {
                Issue.record("expected disconnected, got \(states)")
            }
            if case .failure(let error) = try call(connection, ["PING"], on: loop) {
                #expect(error.code == .unavailable)
            } else {
                Issue.record("a command succeeded with Redis down")
            }

            try redis.restart()
            #expect(loop.run(until: { connection.state.isConnected && probe.resubscriptions == 2 }, timeout: patience))
            #expect(states.last == .connected)
            #expect(try reply(connection, ["GET", "before"], on: loop) == .null)  // restarted empty
            #expect(publishUntilReceived("back", on: "room", via: connection, to: probe, loop: loop))
            probe.subscriber.close()
            connection.close()
        }
    }
}
