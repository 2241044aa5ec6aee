/// At most one log line per interval for one kind of message; counts what it held back
/// (the webhook sender's drops and failures, the cluster link's slow store calls).
package struct RateLimitedLog {
    /// Milliseconds between two lines.
    let intervalMs: Int64
    private var lastAt: Int64?
    private var suppressed = 0

    package init(intervalMs: Int64) { self.intervalMs = intervalMs }

    /// Whether to log now (monotonic ms): the number of lines held back since the last one, or
    /// nil to stay quiet.
    package mutating func allow(now: Int64) -> Int? {
        if let lastAt, now - lastAt < intervalMs {
            suppressed += 1
            return nil
        }
        lastAt = now
        defer { suppressed = 0 }
        return suppressed
    }
}
