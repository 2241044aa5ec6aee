import RollcallProtocol
import Testing
@testable import RollcallCore

/// Deadlines run on the monotonic clock: a wall-clock step (NTP, `date -s`) moves no timer
/// and fires no burst of timeouts; the wall clock only shows in timestamps.
@Suite("wall-clock steps")
struct ClockStepTests {
    /// A broker with a held session, an unlogged connection, a pending interval flush, a
    /// custom status with a TTL and a subscription, all armed at the same moment.
    final class Scene {
        let bench = SessionTestBench { configuration in
            configuration.presence.timeoutSeconds = 30
            configuration.presence.maxInstantEvents = 2
            configuration.presence.hysteresis = 1
            configuration.presence.intervalSeconds = 5
            configuration.limits.loginTimeoutSeconds = 10
            configuration.userStatus.customStatusTtlSeconds = 60
        }
        let watcher: ConnectionID
        let unlogged: ConnectionID

        init() {
            (watcher, _) = bench.login("watcher")
            bench.request("join", ["channel": "lobby"], on: watcher)
            for name in ["a", "b"] {
                let (connection, _) = bench.login(name)
                bench.request("join", ["channel": "lobby"], on: connection)
            }
            let (held, _) = bench.login("held")
            bench.request("join", ["channel": "lobby"], on: held)
            bench.request("setCustomStatus", ["customStatus": "away"], on: held)
            bench.request("subscribeUserStatus", ["userIds": ["held"], "duration": 60], on: watcher)
            bench.end(held, .abnormal(.dropped))
            unlogged = bench.open()
        }

        func tick() { bench.apply(bench.broker.handle(.tick)) }

        func presence(_ type: String) -> [JSON] {
            bench.received(on: watcher).filter { $0["event"] == "presence" && $0["type"] == .string(type) }
        }

        var customStatusOfHeld: JSON? {
            bench.broker.userStatus.record(of: Name("held")!).json["customStatus"]
        }
    }

    @Test("stepping the wall clock an hour forward or back fires nothing and moves no deadline",
          arguments: [3_600_000, -3_600_000] as [Int64])
    func stepFiresNothing(step: Int64) throws {
        let scene = Scene()
        let bench = scene.bench
        let intervalsBefore = scene.presence("interval").count
        bench.clock.stepWallClock(byMilliseconds: step)
        scene.tick()
        #expect(scene.presence("timeout").isEmpty)
        #expect(scene.presence("interval").count == intervalsBefore)
        #expect(bench.closes[scene.unlogged] == nil)
        #expect(scene.customStatusOfHeld == "away")
        #expect(bench.broker.userStatus.subscriptionCount == 1)

        // Each deadline comes when its duration has passed on the monotonic clock, not before.
        bench.advance(seconds: 4.9)
        #expect(scene.presence("interval").count == intervalsBefore)
        bench.advance(seconds: 0.1)
        #expect(scene.presence("interval").count == intervalsBefore + 1)
        bench.advance(seconds: 4.9)
        #expect(bench.closes[scene.unlogged] == nil)
        bench.advance(seconds: 0.1)
        #expect(bench.closes[scene.unlogged] == .loginTimeout)
        bench.advance(seconds: 19.9)
        #expect(bench.broker.heldSessionCount == 1)
        bench.advance(seconds: 0.1)
        #expect(bench.broker.heldSessionCount == 0)
        // Interval mode: the timeout shows in the next interval event, exactly once.
        bench.advance(seconds: 5)
        let timeouts = scene.presence("interval").filter { $0["interval"]?["timeout"] == ["held"] }
        #expect(timeouts.count == 1)
        #expect(scene.presence("timeout").isEmpty)
        bench.advance(seconds: 24.9)
        #expect(scene.customStatusOfHeld == "away")
        #expect(bench.broker.userStatus.subscriptionCount == 1)
        bench.advance(seconds: 0.1)
        #expect(scene.customStatusOfHeld == .null)
        #expect(bench.broker.userStatus.subscriptionCount == 0)
    }

    @Test("timestamps follow the stepped wall clock")
    func timestampsFollowWallClock() throws {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        bench.clock.stepWallClock(byMilliseconds: -86_400_000)
        let reply = bench.request("ping", on: connection)
        #expect(reply["result"]?["serverTime"] == .int(Int(bench.clock.now)))
    }

    @Test("the broker's next deadline is on the monotonic clock")
    func nextDeadlineIsMonotonic() {
        let bench = SessionTestBench { $0.limits.loginTimeoutSeconds = 10 }
        _ = bench.open()
        bench.clock.stepWallClock(byMilliseconds: 3_600_000)
        #expect(bench.broker.nextDeadline == bench.broker.monotonicNow + 10_000)
    }
}
