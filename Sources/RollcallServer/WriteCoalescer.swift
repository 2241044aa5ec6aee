#if canImport(Glibc)
import Glibc
#endif
import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// Write coalescing (docs/transport.md, "Coalescing"). A connection that was written a frame
/// less than ``windowSeconds`` ago is *busy*: when an event arrives for it, it is not written
/// at once but *held*. A libev timer, armed when the held list goes from empty to non-empty,
/// ends the window; the server then writes every held connection at the end of that loop
/// turn (``flushIfDue()``, after the turn's other callbacks, so what they queued shares the
/// frame), straight from the service loop, so the events a busy session gathered meanwhile
/// share one frame with no writable round trip. A *quiet* connection (no frame in the last
/// window) is written at once: at low load nothing waits.
///
/// Nothing can be lost to a late or early flush: a held connection keeps its queue, and the
/// flush only writes what is queued (a connection that went away meanwhile is skipped; one
/// that was written meanwhile, by a heartbeat ping or a close, is just written again if
/// something is left). The timer is libev's own, so lws' timer handling cannot delay it.
///
/// Busy is judged on the monotonic clock read when a frame is written and when an event is
/// queued, not on libev's loop time, which is read once per turn: a turn that writes a
/// thousand frames lasts milliseconds, and the connections written late in it would
/// otherwise look quiet to the next turn and get a frame per event (BENCHMARKS.md, Issue 16
/// §1, "Flush at the end of the turn").
final class WriteCoalescer {
    /// How long a busy connection's events may wait for the flush, and how recent a frame
    /// makes a connection busy. Measured in BENCHMARKS.md (fanout, latency).
    static let windowSeconds = 0.004

    private var timer: LoopTimer?
    private var held: [ConnectionID] = []
    private var flushing: [ConnectionID] = []
    /// The window ended: ``flushIfDue()`` writes the held connections.
    private(set) var isDue = false
    private let flush: (ConnectionID) -> Void

    /// A coalescer on `loop`; `flush` is called for each held connection by ``flushIfDue()``
    /// once the window has ended.
    init(loop: EventLoop, flush: @escaping (ConnectionID) -> Void) {
        self.flush = flush
        timer = LoopTimer(loop: loop) { [unowned self] in isDue = true }
    }

    /// The monotonic clock, in seconds (vDSO: no system call).
    var now: Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
    }

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
        isDue = false
    }

    /// Called by the service loop after every loop turn: when the window has ended, calls
    /// `flush` for each connection held until then. One held during the flush (a write that
    /// failed and closed its connection can feed the core) waits for the next window.
    func flushIfDue() {
        guard isDue else { return }
        isDue = false
        swap(&held, &flushing)
        for id in flushing { flush(id) }
        flushing.removeAll(keepingCapacity: true)
        if !held.isEmpty { timer?.schedule(after: Self.windowSeconds) }
    }
}
