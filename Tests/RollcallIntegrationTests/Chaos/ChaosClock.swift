import Foundation

/// The time base of one chaos run and the stop signal its churning threads pace on: seconds
/// since the churn started (so the fault timeline and each client's history line up), and
/// waits that end early once the churn is told to stop.
final class ChaosClock: @unchecked Sendable {
    private let cond = NSCondition()
    /// When the clock was made (the report prints it, to line the timeline up with the nodes' logs).
    let started = Date()
    private var stopping = false

    /// Seconds since the clock was made.
    var elapsed: Double { Date().timeIntervalSince(started) }

    /// True once ``stop()`` was called.
    var isStopping: Bool { cond.withLock { stopping } }

    /// Tells every pacing thread to finish.
    func stop() {
        cond.withLock {
            stopping = true
            cond.broadcast()
        }
    }

    /// Paces the caller for `seconds` (the gap between two operations of a client, a backoff
    /// after `UNAVAILABLE`, a fault's duration); returns early, with false, once stopping.
    /// With `interruptible` false the whole time is waited (the settle phase after the churn).
    @discardableResult
    func pace(_ seconds: Double, interruptible: Bool = true) -> Bool {
        let deadline = Date(timeIntervalSinceNow: max(0, seconds))
        cond.lock()
        defer { cond.unlock() }
        while Date() < deadline {
            if interruptible && stopping { return false }
            _ = cond.wait(until: deadline)
        }
        return !(interruptible && stopping)
    }

    /// Paces until `second` on this clock (a fault's start); false once stopping.
    @discardableResult
    func pace(until second: Double) -> Bool { pace(second - elapsed) }

    /// `12.34s`: a time stamp for histories and timelines.
    func stamp() -> String { String(format: "%6.2fs", elapsed) }
}
