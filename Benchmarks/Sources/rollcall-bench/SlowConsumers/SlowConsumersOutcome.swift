import Foundation

/// What one slow-consumers run measured, from the first publish to the last reply and delivery.
struct SlowConsumersOutcome {
    /// Messages the run was to publish, and publishes sent.
    let messages: Int
    let sent: Int
    /// Publish replies: `ok: true` ones, and errors.
    let acknowledged: Int
    let rejected: Int
    /// Σ `recipients` over the acknowledged publishes (objects queued for live sessions).
    let recipients: Int
    /// Message events the fast receivers should have had (messages × fast receivers), and had.
    let fastExpected: Int
    let fastDelivered: Int
    /// Fast receivers the broker closed during the run.
    let fastClosed: Int
    /// Broker CPU over the run.
    let cpu: CPUTimes
    /// Seconds from the first publish until everything was in (or the timeout).
    let wallSeconds: Double
    /// The run stopped (its timeout, or the publisher or a fast receiver closed) with replies
    /// or deliveries missing.
    let timedOut: Bool
    /// Broker CPU against messages answered.
    let curve: BrokerCPUCurve
    /// Δ `rollcall_slow_consumer_cuts_total` (close 1013) and `rollcall_heartbeat_timeouts_total`
    /// over the run; nil when `/metrics` could not be read.
    let slowConsumerCuts: Int?
    let heartbeatTimeouts: Int?
}
