import CRollcallShim

/// One lws sorted-usec-list timer on the service thread that calls a closure when it fires
/// (the key set file's polls, the key set URL's fetches and deadlines). Service thread only;
/// ``cancel()`` before the context is destroyed.
package final class ServiceTimer {
    private let timer: UnsafeMutablePointer<rollcall_timer_t>
    private let context: OpaquePointer
    private let fire: () -> Void

    /// A timer on `context` that runs `fire` each time it expires.
    package init(context: OpaquePointer, fire: @escaping () -> Void) {
        self.context = context
        self.fire = fire
        timer = .allocate(capacity: 1)
        timer.initialize(to: rollcall_timer_t())
        timer.pointee.owner = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        lws_sul_cancel(&timer.pointee.sul)
        timer.deallocate()
    }

    /// Fires once, `milliseconds` from now (replacing an earlier schedule).
    package func schedule(inMilliseconds milliseconds: Int64) {
        lws_sul_schedule(context, 0, &timer.pointee.sul, rollcallServiceTimerFired, lws_usec_t(max(0, milliseconds)) * 1000)
    }

    /// Stops a pending schedule.
    package func cancel() {
        lws_sul_cancel(&timer.pointee.sul)
    }

    fileprivate func fired() { fire() }
}

/// Fires a ``ServiceTimer``.
private let rollcallServiceTimerFired: @convention(c) (UnsafeMutablePointer<lws_sorted_usec_list_t>?) -> Void = { sul in
    guard let sul, let owner = rollcall_timer_from_sul(sul).pointee.owner else { return }
    Unmanaged<ServiceTimer>.fromOpaque(owner).takeUnretainedValue().fired()
}
