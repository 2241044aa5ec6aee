import CRollcallShim
import RollcallCore

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
        guard phase != .stopped, let context else { return }
        let now = MonotonicClock.now
        var target: Int64?
        if let deadline = broker.nextDeadline {
            target = now + max(0, deadline - broker.monotonicNow)
        }
        if let check = records.nextHeartbeatCheck() {
            // Heartbeat checks are coalesced: waking `heartbeatSlackMs` late lets one wake-up
            // serve every connection due in that window, so n connections cost a bounded
            // number of wake-ups per second instead of n / interval (each wake-up is an
            // lws service turn that polls every descriptor).
            let coalesced = check + heartbeatSlackMs
            target = min(target ?? coalesced, coalesced)
        }
        if case .draining(let deadline) = phase, webhookDrainDeadline == nil || deadline > now {
            target = min(target ?? deadline, deadline)
        }
        // Shutdown waiting for webhook batches: wake once at the end of their grace period (a
        // deadline already passed must not re-arm the timer at once, over and over).
        if let webhookDeadline = webhookDrainDeadline, webhookDeadline > now {
            target = min(target ?? webhookDeadline, webhookDeadline)
        }
        guard let target else {
            if armedTimerAt != nil {
                lws_sul_cancel(&timer.pointee.sul)
                armedTimerAt = nil
            }
            return
        }
        guard armedTimerAt != target else { return }
        armedTimerAt = target
        lws_sul_schedule(context, 0, &timer.pointee.sul, rollcallTimerFired, lws_usec_t(max(0, target - now)) * 1000)
    }

    /// How late a heartbeat check may run (see ``HeartbeatPolicy/slackMs``).
    var heartbeatSlackMs: Int64 { heartbeat.slackMs }

    /// The timer fired: heartbeats, then the broker's due timers.
    func timerFired() {
        armedTimerAt = nil
        guard phase != .stopped else { return }
        checkHeartbeats(now: MonotonicClock.now)
        feed(.tick)
    }

    private func checkHeartbeats(now: Int64) {
        for record in records.dueForHeartbeatCheck(at: now) {
            let actions = record.lifecycle.heartbeatCheck(at: now, policy: heartbeat)
            if actions.contains(.reportEnded(.abnormal(.heartbeatTimeout))) {
                logger.debug("heartbeat timeout", metadata: ["connection": "\(record.id)"])
                metrics.heartbeatTimeouts += 1
            }
            perform(actions, for: record)
        }
    }
}
