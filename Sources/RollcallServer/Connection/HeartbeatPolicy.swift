/// When the transport pings a connection and when it gives up on a silent one, in
/// monotonic milliseconds (`heartbeat.intervalSeconds`, `heartbeat.timeoutSeconds`).
struct HeartbeatPolicy: Equatable, Sendable {
    /// A ping goes out this long after the previous one.
    let intervalMs: Int64
    /// A connection that sent nothing (frames or pongs) for this long is dropped.
    let timeoutMs: Int64

    /// A policy in milliseconds; both are at least 1.
    init(intervalMs: Int64, timeoutMs: Int64) {
        self.intervalMs = max(1, intervalMs)
        self.timeoutMs = max(1, timeoutMs)
    }

    /// A policy from the configuration's seconds, rounded to milliseconds.
    init(intervalSeconds: Double, timeoutSeconds: Double) {
        self.init(intervalMs: Int64((intervalSeconds * 1000).rounded()),
                  timeoutMs: Int64((timeoutSeconds * 1000).rounded()))
    }

    /// How late a heartbeat check may run so that checks falling due close together share
    /// one wake-up: a tenth of the shorter heartbeat period, at most 50 ms.
    var slackMs: Int64 { min(50, min(intervalMs, timeoutMs) / 10) }
}
