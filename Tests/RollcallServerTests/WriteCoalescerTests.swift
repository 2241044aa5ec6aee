import RollcallCore
import RollcallEventLoop
import RollcallRedis
@testable import RollcallServer
import RollcallTestSupport
import Testing

/// The coalescing flush on a real libev loop (no sockets): every held connection is flushed
/// exactly once, at the end of the loop turn in which the window ended (the service loop calls
/// `endTurn()` after each turn, as these tests do), and only busy connections count as busy.
@Suite("WriteCoalescer")
struct WriteCoalescerTests {
    @Test func flushesEveryHeldConnectionOnceAfterTheWindow() throws {
        try EventLoop.withTestLoop { loop in
            var flushed: [ConnectionID] = []
            let coalescer = WriteCoalescer(loop: loop) { flushed.append(contentsOf: $0) }
            defer { coalescer.stop() }
            let held = (1...500).map { ConnectionID(UInt64($0)) }
            let heldAt = loop.now
            for id in held { coalescer.hold(id) }
            coalescer.endTurn()
            #expect(flushed.isEmpty && !coalescer.isDue)
            #expect(loop.run(until: { coalescer.endTurn(); return flushed.count == held.count }, timeout: 2))
            #expect(flushed == held)
            #expect(loop.now - heldAt >= coalescer.windowSeconds * 0.9)
            // A second round arms the timer again: nothing is left behind.
            coalescer.hold(ConnectionID(7))
            #expect(loop.run(until: { coalescer.endTurn(); return flushed.count == held.count + 1 }, timeout: 2))
            #expect(flushed.last == ConnectionID(7))
        }
    }

    @Test func aConnectionIsBusyOnlyWithinTheWindowOfItsLastFrame() throws {
        try EventLoop.withTestLoop { loop in
            let coalescer = WriteCoalescer(loop: loop) { _ in }
            defer { coalescer.stop() }
            #expect(!coalescer.isBusy(lastFrameAt: -.infinity))
            #expect(coalescer.isBusy(lastFrameAt: coalescer.now))
            #expect(!coalescer.isBusy(lastFrameAt: coalescer.now - coalescer.busySeconds * 1.5))
        }
    }

    @Test func stopDropsTheTimerWithoutFlushing() throws {
        try EventLoop.withTestLoop { loop in
            var flushed = 0
            let coalescer = WriteCoalescer(loop: loop) { flushed += $0.count }
            coalescer.hold(ConnectionID(1))
            coalescer.stop()
            var waited = false
            let wait = LoopTimer(loop: loop) { waited = true }
            defer { wait.cancel() }
            wait.schedule(after: coalescer.windowSeconds * 3)
            #expect(loop.run(until: { coalescer.endTurn(); return waited }, timeout: 2))
            #expect(flushed == 0)
        }
    }

    /// The timer only marks the window as ended: nothing is flushed from inside the loop turn,
    /// so callbacks later in the same turn can still add to the held connections' frames.
    @Test func theTimerMarksTheFlushDueAndTheServiceLoopRunsIt() throws {
        try EventLoop.withTestLoop { loop in
            var flushed: [ConnectionID] = []
            let coalescer = WriteCoalescer(loop: loop) { flushed.append(contentsOf: $0) }
            defer { coalescer.stop() }
            coalescer.hold(ConnectionID(1))
            #expect(loop.run(until: { coalescer.isDue }, timeout: 2))
            #expect(flushed.isEmpty)
            coalescer.endTurn()
            #expect(flushed == [ConnectionID(1)] && !coalescer.isDue)
            coalescer.endTurn()
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
            while coalescer.now - before < coalescer.busySeconds * 2 { spin += 1 }
            #expect(!coalescer.isBusy(lastFrameAt: before))
            #expect(coalescer.isBusy(lastFrameAt: coalescer.now))
            #expect(spin > 0)
        }
    }

    /// A busy requester waits for its reply: it is written at the end of the turn, once however
    /// many replies it was given, and before the held connections of an ended window.
    @Test func endOfTurnWritesComeAtTheEndOfTheTurnOnceAndBeforeTheFlush() throws {
        try EventLoop.withTestLoop { loop in
            var flushed: [ConnectionID] = []
            let coalescer = WriteCoalescer(loop: loop) { flushed.append(contentsOf: $0) }
            defer { coalescer.stop() }
            coalescer.hold(ConnectionID(1))
            coalescer.writeAtEndOfTurn(ConnectionID(2))
            coalescer.writeAtEndOfTurn(ConnectionID(2))
            #expect(flushed.isEmpty)
            coalescer.endTurn()
            #expect(flushed == [ConnectionID(2)])  // the window has not ended: 1 stays held
            #expect(loop.run(until: { coalescer.isDue }, timeout: 2))
            coalescer.writeAtEndOfTurn(ConnectionID(3))
            coalescer.endTurn()
            #expect(flushed == [ConnectionID(2), ConnectionID(3), ConnectionID(1)])
            coalescer.endTurn()
            #expect(flushed.count == 3)
        }
    }
}
