import CRollcallShim

/// A one-shot timer on an ``EventLoop``'s libev loop: `schedule(after:)` arms (or re-arms) it,
/// and the loop calls `fire` on its own thread when it expires. No thread, no lock. Used by
/// the transport (the write coalescer) and the Redis links alike.
public final class LoopTimer {
    private var timer: OpaquePointer?
    private let fire: () -> Void

    /// A timer on `loop`, not yet scheduled.
    public init(loop: EventLoop, fire: @escaping () -> Void) {
        self.fire = fire
        timer = nil
        timer = rollcall_loop_timer_create(loop.loop, { owner in
            guard let owner else { return }
            // Held for the call: `fire` may drop the last other reference to the timer.
            let timer = Unmanaged<LoopTimer>.fromOpaque(owner).takeUnretainedValue()
            withExtendedLifetime(timer) { timer.fire() }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Fires once `seconds` after the loop's current time; replaces an earlier schedule.
    public func schedule(after seconds: Double) {
        guard let timer else { return }
        rollcall_loop_timer_schedule(timer, seconds)
    }

    /// Stops the timer; it does not fire until scheduled again.
    public func cancel() {
        guard let timer else { return }
        rollcall_loop_timer_cancel(timer)
    }

    /// True while scheduled and not yet fired.
    public var isScheduled: Bool {
        guard let timer else { return false }
        return rollcall_loop_timer_is_scheduled(timer) != 0
    }

    deinit { rollcall_loop_timer_destroy(timer) }
}

extension EventLoop {
    /// The loop's time in seconds (libev's `ev_now`, updated once per turn): what timers are
    /// measured against.
    public var now: Double { rollcall_loop_now(loop) }
}
