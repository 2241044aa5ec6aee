import CRollcallShim
import RollcallCore
import RollcallEventLoop

/// One lws sorted-usec-list timer drives everything time-based: the core's
/// ``Broker/nextDeadline`` (login timeouts, held sessions, presence intervals, ...), the
/// transport's heartbeats and the shutdown grace period. It is re-armed after every event
/// the broker handles, only when the earliest deadline moved.
///
/// **Heartbeat** (transport-owned, not lws' `retry_and_idle_policy`, so fractional seconds
/// are exact and a silence drop is known to be one): every connection is checked at
/// `min(lastPing + interval, lastHeard + timeout)`. A connection that sent nothing (frames or
/// pongs) for `heartbeat.timeoutSeconds` is dropped without a close frame and reported as
/// `.abnormal(.heartbeatTimeout)`; otherwise a ping goes out every `heartbeat.intervalSeconds`.
extension BrokerServer {
    /// Arms the timer for the earliest of the broker's deadline, the next heartbeat check and
    /// the shutdown deadline (all converted to the monotonic clock).
    func armTimer() {
        guard loop.phase != .stopped, loop.context != nil else { return }
        let now = MonotonicClock.now
        let target = DeadlineTimer.target(
            now: now, coreDeadline: broker.nextDeadline.map { now + max(0, $0 - broker.monotonicNow) },
            heartbeatCheck: records.nextHeartbeatCheck(), heartbeatSlackMs: loop.heartbeat.slackMs,
            drainDeadline: loop.drainDeadline, webhookDeadline: services.webhookDrainDeadline)
        loop.timer.arm(at: target, now: now)
    }

    /// The timer fired: heartbeats, then the broker's due timers.
    func timerFired() {
        loop.timer.fired()
        guard loop.phase != .stopped else { return }
        checkHeartbeats(now: MonotonicClock.now)
        feed(.tick)
    }

    private func checkHeartbeats(now: Int64) {
        for record in records.dueForHeartbeatCheck(at: now) {
            let actions = record.lifecycle.heartbeatCheck(at: now, policy: loop.heartbeat)
            if actions.contains(.reportEnded(.abnormal(.heartbeatTimeout))) {
                logger.debug("heartbeat timeout", metadata: ["connection": "\(record.id)"])
                metrics.heartbeatTimeouts += 1
            }
            perform(actions, for: record)
        }
    }
}
