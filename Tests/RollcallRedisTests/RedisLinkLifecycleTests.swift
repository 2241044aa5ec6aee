@testable import RollcallRedis
import Testing

/// The one reconnect machine of both Redis clients (``RedisLinkLifecycle``), driven with plain
/// numbers for the loop's time: no loop, no Redis.
@Suite("RedisLinkLifecycle")
struct RedisLinkLifecycleTests {
    let timings = RedisTimings(timeoutSeconds: 5, initialBackoffSeconds: 0.05, maxBackoffSeconds: 0.2)
    let refused = RedisError(.connectFailed, "refused")

    @Test func startsOnceThenReportsConnectedOnce() {
        var lifecycle = RedisLinkLifecycle(timings: timings)
        #expect(!lifecycle.isReady && lifecycle.state == .disconnected(RedisError(.unavailable, "not connected yet")))
        #expect(lifecycle.start() == [.connect])
        #expect(lifecycle.start() == [], "a second start does nothing")
        #expect(lifecycle.ready() == [.notify(.connected)])
        #expect(lifecycle.isReady && lifecycle.state == .connected)
        #expect(lifecycle.ready() == [], "already ready")
    }

    @Test func lossesBackOffDoublingUpToTheCeilingAndStartOverOnceReady() {
        var lifecycle = RedisLinkLifecycle(timings: timings)
        _ = lifecycle.start()
        #expect(lifecycle.lost(refused, now: 0) == [.scheduleReconnect(after: 0.05), .notify(.disconnected(refused))])
        #expect(lifecycle.phase == .waiting(until: 0.05))
        #expect(lifecycle.retryAfterMs(now: 0) == 100, "the wait left plus one initial backoff")
        #expect(lifecycle.retryAfterMs(now: 1) == 1, "overdue (the timer has not run yet): at least 1 ms")
        var delays: [Double] = []
        for attempt in 0..<4 {
            #expect(lifecycle.reconnectDue() == [.connect])
            let steps = lifecycle.lost(refused, now: 11 + Double(attempt))
            #expect(!steps.contains(.notify(.disconnected(refused))), "still down: no second notification")
            if case .scheduleReconnect(let delay) = steps.first { delays.append(delay) }
        }
        #expect(delays == [0.1, 0.2, 0.2, 0.2])
        #expect(lifecycle.reconnectDue() == [.connect])
        #expect(lifecycle.ready() == [.notify(.connected)])
        #expect(lifecycle.lost(refused, now: 20) == [.scheduleReconnect(after: 0.05), .notify(.disconnected(refused))],
                "a link that came up starts the backoff over")
    }

    @Test func aLossWithoutALinkOnlyUpdatesTheState() {
        var lifecycle = RedisLinkLifecycle(timings: timings)
        _ = lifecycle.start()
        _ = lifecycle.lost(refused, now: 0)
        let other = RedisError(.timeout, "late")
        #expect(lifecycle.lost(other, now: 0.01) == [], "waiting already: no new schedule, no notification")
        #expect(lifecycle.state == .disconnected(other))
        #expect(lifecycle.reconnectDue() == [.connect])
        #expect(lifecycle.reconnectDue() == [], "not waiting any more")
    }

    @Test func closingStopsEverythingAndReportsALinkThatWasUp() {
        var lifecycle = RedisLinkLifecycle(timings: timings)
        _ = lifecycle.start()
        _ = lifecycle.ready()
        let closed = RedisError(.closed, "closed")
        #expect(lifecycle.close(closed) == [.cancelReconnect, .notify(.disconnected(closed))])
        #expect(lifecycle.isClosed)
        #expect(lifecycle.close(closed) == [])
        #expect(lifecycle.lost(refused, now: 1) == [], "nothing after close")
        #expect(lifecycle.start() == [] && lifecycle.reconnectDue() == [])

        var waiting = RedisLinkLifecycle(timings: timings)
        _ = waiting.start()
        _ = waiting.lost(refused, now: 0)
        #expect(waiting.close(closed) == [.cancelReconnect], "no link: nothing to report")
    }
}

/// Which error replies mean "not now" (PROTOCOL §9: answered `UNAVAILABLE`, never `INTERNAL`).
@Suite("RedisError not now")
struct RedisErrorNotNowTests {
    @Test func theNotNowRepliesAndNothingElse() {
        for line in ["OOM command not allowed when used memory > 'maxmemory'.", "BUSY Redis is busy running a script.",
                     "LOADING Redis is loading the dataset in memory", "READONLY You can't write against a read only replica.",
                     "MASTERDOWN Link with MASTER is down", "TRYAGAIN Multiple keys request during rehashing of slot",
                     "CLUSTERDOWN The cluster is down",
                     "NOREPLICAS Not enough good replicas to write. script: 1d61ffba51ebbb794b2e306d6f56233dae38ebfb, on @user_script:115."] {
            #expect(RedisError(.errorReply, line).isNotNow, "\(line)")
        }
        for line in ["NOSCRIPT No matching script.", "WRONGTYPE Operation against a key holding the wrong kind of value",
                     "ERR unknown command", "BUSYKEY Target key name already exists.", "OOMX"] {
            #expect(!RedisError(.errorReply, line).isNotNow, "\(line)")
        }
        #expect(!RedisError(.timeout, "OOM").isNotNow, "only error replies")
    }
}
