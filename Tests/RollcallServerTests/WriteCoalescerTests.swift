import RollcallCore
import RollcallEventLoop
import RollcallRedis
@testable import RollcallServer
import RollcallTestSupport
import Testing

/// The coalescing flush on a real libev loop (no sockets): every held connection is flushed
/// exactly once, within the window, and only busy connections count as busy.
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
            #expect(flushed.isEmpty)
            #expect(loop.run(until: { flushed.count == held.count }, timeout: 2))
            #expect(flushed == held)
            #expect(loop.now - heldAt >= WriteCoalescer.windowSeconds * 0.9)
            // A second round arms the timer again: nothing is left behind.
            coalescer.hold(ConnectionID(7))
            #expect(loop.run(until: { flushed.count == held.count + 1 }, timeout: 2))
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
            #expect(loop.run(until: { waited }, timeout: 2))
            #expect(flushed == 0)
        }
    }
}
