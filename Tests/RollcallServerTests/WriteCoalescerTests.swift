import RollcallCore
import RollcallEventLoop
import RollcallRedis
@testable import RollcallServer
import RollcallTestSupport
import Testing

/// The coalescing flush on a real libev loop (no sockets): every held connection is flushed
/// exactly once, at the end of the loop turn in which the window ended (the service loop calls
/// `flushIfDue()` after each turn, as these tests do), and only busy connections count as busy.
@Suite("WriteCoalescer")
struct WriteCoalescerTests {
    @Test func flushesEveryHeldConnectionOnceAfterTheWindow() throws {
        try EventLoop.withTestLoop { loop in
            var flushed: [ConnectionID] = []
            let coalescer = WriteCoalescer(loop: loop) { flushed.append($0) }
            defer { coalescer.stop() }
            let held = (1...500).map { ConnectionID(UInt64($0)) }
            let heldAt = loop.now
            for id in held { coalescer.hold(id) }
            coalescer.flushIfDue()
            #expect(flushed.isEmpty && !coalescer.isDue)
            #expect(loop.run(until: { coalescer.flushIfDue(); return flushed.count == held.count }, timeout: 2))
            #expect(flushed == held)
            #expect(loop.now - heldAt >= WriteCoalescer.windowSeconds * 0.9)
            // A second round arms the timer again: nothing is left behind.
            coalescer.hold(ConnectionID(7))
            #expect(loop.run(until: { coalescer.flushIfDue(); return flushed.count == held.count + 1 }, timeout: 2))
            #expect(flushed.last == ConnectionID(7))
        }
    }

    @Test func aConnectionIsBusyOnlyWithinTheWindowOfItsLastFrame() throws {
        try EventLoop.withTestLoop { loop in
            let coalescer = WriteCoalescer(loop: loop) { _ in }
            defer { coalescer.stop() }
            #expect(!coalescer.isBusy(lastFrameAt: -.infinity))
            #expect(coalescer.isBusy(lastFrameAt: coalescer.now))
            #expect(!coalescer.isBusy(lastFrameAt: coalescer.now - WriteCoalescer.windowSeconds * 1.5))
        }
    }

    @Test func stopDropsTheTimerWithoutFlushing() throws {
        try EventLoop.withTestLoop { loop in
            var flushed = 0
            let coalescer = WriteCoalescer(loop: loop) { _ in flushed += 1 }
            coalescer.hold(ConnectionID(1))
            coalescer.stop()
            var waited = false
            let wait = LoopTimer(loop: loop) { waited = true }
            defer { wait.cancel() }
            wait.schedule(after: WriteCoalescer.windowSeconds * 3)
            #expect(loop.run(until: { coalescer.flushIfDue(); return waited }, timeout: 2))
            #expect(flushed == 0)
        }
    }

    /// The timer only marks the window as ended: nothing is flushed from inside the loop turn,
    /// so callbacks later in the same turn can still add to the held connections' frames.
    @Test func theTimerMarksTheFlushDueAndTheServiceLoopRunsIt() throws {
        try EventLoop.withTestLoop { loop in
            var flushed: [ConnectionID] = []
            let coalescer = WriteCoalescer(loop: loop) { flushed.append($0) }
            defer { coalescer.stop() }
            coalescer.hold(ConnectionID(1))
            #expect(loop.run(until: { coalescer.isDue }, timeout: 2))
            #expect(flushed.isEmpty)
            coalescer.flushIfDue()
            #expect(flushed == [ConnectionID(1)] && !coalescer.isDue)
            coalescer.flushIfDue()
            #expect(flushed.count == 1)
        }
    }

    /// Busy is judged on the monotonic clock of the moment, not on the loop's time of the
    /// turn's start (no loop turn runs here, so the loop's time stands still meanwhile).
    @Test func busyIsJudgedOnTheClockOfTheMoment() throws {
        try EventLoop.withTestLoop { loop in
            let coalescer = WriteCoalescer(loop: loop) { _ in }
            defer { coalescer.stop() }
            let before = coalescer.now
            var spin = 0.0
            while coalescer.now - before < WriteCoalescer.windowSeconds * 2 { spin += 1 }
            #expect(!coalescer.isBusy(lastFrameAt: before))
            #expect(coalescer.isBusy(lastFrameAt: coalescer.now))
            #expect(spin > 0)
        }
    }
}
