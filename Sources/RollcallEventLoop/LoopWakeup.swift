import CRollcallShim

/// Wakes an ``EventLoop``'s libev loop from another thread (libev's `ev_async`): ``signal()``
/// from any thread, and the loop calls `fire` on its own thread soon after (several signals
/// before it runs may give one call). Used where a background thread hands work back to a loop
/// that has no lws context to cancel (the Redis links' name lookups, ``BackgroundResolver``).
public final class LoopWakeup: @unchecked Sendable {
    private var wakeup: OpaquePointer?
    private let fire: () -> Void

    /// A wake-up on `loop`, ready to be signalled (create and destroy it on the loop's thread).
    public init(loop: EventLoop, fire: @escaping () -> Void) {
        self.fire = fire
        wakeup = nil
        wakeup = rollcall_loop_wakeup_create(loop.loop, { owner in
            guard let owner else { return }
            let wakeup = Unmanaged<LoopWakeup>.fromOpaque(owner).takeUnretainedValue()
            withExtendedLifetime(wakeup) { wakeup.fire() }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Makes the loop call `fire`. Any thread; never after the wake-up went away (whoever
    /// signals must be stopped first, as ``BackgroundResolver/stop()`` does).
    public func signal() {
        guard let wakeup else { return }
        rollcall_loop_wakeup_signal(wakeup)
    }

    deinit { rollcall_loop_wakeup_destroy(wakeup) }
}
