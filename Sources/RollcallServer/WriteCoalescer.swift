import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// Write coalescing (docs/transport.md, "Coalescing"). A connection that was written a frame
/// less than ``windowSeconds`` ago is *busy*: when an event arrives for it, it is not written
/// at once but *held*, and the loop's flush (a libev timer, at most ``windowSeconds`` after
/// the first hold) asks for every held connection's writable callback together, so the
/// events a busy session gathered meanwhile share one frame. A *quiet* connection (no frame
/// in the last window) is written at once: at low load nothing waits.
///
/// Nothing can be lost to a late or early flush: a held connection keeps its queue, and the
/// flush only asks for writable callbacks (a connection that went away meanwhile is skipped;
/// one that was written meanwhile, by a heartbeat ping or a close, is just written again if
/// something is left). The timer is libev's own, armed whenever the held list goes from
/// empty to non-empty, so lws' timer handling cannot delay it.
final class WriteCoalescer {
    /// How long a busy connection's events may wait for the flush, and how recent a frame
    /// makes a connection busy. Measured in BENCHMARKS.md (fanout, latency).
    static let windowSeconds = 0.004

    private let loop: EventLoop
    private var timer: LoopTimer?
    private var held: [ConnectionID] = []
    private var flushing: [ConnectionID] = []
    private let flush: (ConnectionID) -> Void

    /// A coalescer on `loop`; `flush` is called for each held connection when the window ends.
    init(loop: EventLoop, flush: @escaping (ConnectionID) -> Void) {
        self.loop = loop
        self.flush = flush
        timer = LoopTimer(loop: loop) { [unowned self] in flushHeld() }
    }

    /// The loop's time (libev's `ev_now`, updated once per loop turn), in seconds.
    var now: Double { loop.now }

    /// True when a connection whose last frame was written at `lastFrameAt` (``now`` then) is
    /// busy, so its next events should wait for the flush.
    func isBusy(lastFrameAt: Double) -> Bool {
        now - lastFrameAt < Self.windowSeconds
    }

    /// Holds `id` until the next flush.
    func hold(_ id: ConnectionID) {
        held.append(id)
        if held.count == 1 { timer?.schedule(after: Self.windowSeconds) }
    }

    /// Stops the timer (before the loop is destroyed); held connections are not flushed.
    func stop() {
        timer?.cancel()
        timer = nil
        held.removeAll()
    }

    private func flushHeld() {
        swap(&held, &flushing)
        for id in flushing { flush(id) }
        flushing.removeAll(keepingCapacity: true)
        // A flush callback may hold again (it does not today); keep the timer armed for it.
        if !held.isEmpty { timer?.schedule(after: Self.windowSeconds) }
    }
}
