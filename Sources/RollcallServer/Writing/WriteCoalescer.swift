import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// Write coalescing (docs/transport.md, "Coalescing"). A connection that was written a frame
/// less than ``busySeconds`` ago is *busy*: when an event arrives for it, it is not written at
/// once but *held*. A libev timer, armed when the held list goes from empty to non-empty,
/// ends the window ``windowSeconds`` later; the server then writes every held connection at
/// the end of that loop turn (``endTurn()``, after the turn's other callbacks, so what they
/// queued shares the frame), straight from the service loop, with no writable round trip. A
/// busy connection whose own request produced the output is not held but written at the end
/// of the current turn (``writeAtEndOfTurn(_:)``): it is waiting for its reply. A *quiet*
/// connection is written at once: at low load nothing waits.
///
/// Nothing can be lost to a late or early flush: a held connection keeps its queue, and the
/// flush only writes what is queued (a connection that went away meanwhile is skipped; one
/// that was written meanwhile, by a heartbeat ping, a close or a reply, is just written again
/// if something is left). The timer is libev's own, so lws' timer handling cannot delay it.
///
/// Busy is judged on the monotonic clock read when a frame is written and when an event is
/// queued, not on libev's loop time, which is read once per turn: a turn that writes a
/// thousand frames lasts milliseconds, and the connections written early in it would
/// otherwise look quiet to the next turn and get a frame per event (BENCHMARKS.md, Issue 16
/// §1c).
final class WriteCoalescer {
    /// How long a busy connection's events may wait for the flush (at most, plus the loop turn
    /// in progress): `http.coalesceWindowSeconds`, default 4 ms, above 0 (a window of 0 is no
    /// coalescer at all). Measured in BENCHMARKS.md (fanout, latency); docs/configuration.md
    /// gives the price of each setting.
    let windowSeconds: Double
    /// How recent a frame makes a connection busy: `http.coalesceBusySeconds`, default 16 ms. A
    /// session that gets pushes more often than every 16 ms (over ~60 a second) has them
    /// gathered; one that gets fewer sees each at once. Longer than the window, so that a
    /// flush writing a thousand connections (~10 ms) does not leave the first of them quiet,
    /// each to get its next event alone (BENCHMARKS.md, Issue 16 §1c).
    let busySeconds: Double

    private var timer: LoopTimer?
    private var held: [ConnectionID] = []
    private var flushing: [ConnectionID] = []
    private var endOfTurn: [ConnectionID] = []
    /// The window ended: the next ``endTurn()`` writes the held connections.
    private(set) var isDue = false
    private let flush: ([ConnectionID]) -> Void

    /// A coalescer on `loop` with the given window and busy threshold (the configuration's
    /// defaults unless given); `flush` is called by ``endTurn()`` with the connections to write
    /// (all of them at once, so their frames can go out in one batch, ``BatchedSends``).
    init(loop: EventLoop, windowSeconds: Double = Configuration.HTTP().coalesceWindowSeconds,
         busySeconds: Double = Configuration.HTTP().coalesceBusySeconds,
         flush: @escaping ([ConnectionID]) -> Void) {
        precondition(windowSeconds > 0, "a window of 0 is no coalescer")
        self.windowSeconds = windowSeconds
        self.busySeconds = busySeconds
        self.flush = flush
        timer = LoopTimer(loop: loop) { [unowned self] in isDue = true }
    }

    /// The monotonic clock, in seconds (vDSO: no system call).
    var now: Double { MonotonicClock.seconds }

    /// True when a connection whose last frame was written at `lastFrameAt` (``now`` then) is
    /// busy, so its next events should wait for the flush.
    func isBusy(lastFrameAt: Double) -> Bool {
        now - lastFrameAt < busySeconds
    }

    /// Holds `id` until the next flush.
    func hold(_ id: ConnectionID) {
        held.append(id)
        if held.count == 1 { timer?.schedule(after: windowSeconds) }
    }

    /// Stops the timer (before the loop is destroyed); held connections are not flushed.
    func stop() {
        timer?.cancel()
        timer = nil
        held.removeAll()
        endOfTurn.removeAll()
        isDue = false
    }

    /// Writes `id` at the end of the current loop turn (``endTurn()``) rather than after the
    /// window: a busy connection that is waiting for a reply.
    func writeAtEndOfTurn(_ id: ConnectionID) {
        if endOfTurn.last != id { endOfTurn.append(id) }
    }

    /// Called by the service loop after every loop turn: calls `flush` with the connections
    /// given to ``writeAtEndOfTurn(_:)`` during the turn, then, when the window has ended, with
    /// those held until then (``flushIfDue()``).
    func endTurn() {
        if !endOfTurn.isEmpty {
            swap(&endOfTurn, &flushing)
            flush(flushing)
            flushing.removeAll(keepingCapacity: true)
        }
        flushIfDue()
    }

    /// When the window has ended, calls `flush` with the connections held until then. One held
    /// during the flush (a write that failed and closed its connection can feed the core)
    /// waits for the next window.
    private func flushIfDue() {
        guard isDue else { return }
        isDue = false
        swap(&held, &flushing)
        flush(flushing)
        flushing.removeAll(keepingCapacity: true)
        if !held.isEmpty { timer?.schedule(after: windowSeconds) }
    }
}
