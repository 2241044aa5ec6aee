import RollcallEventLoop

/// The server's one lws timer, which drives everything time-based: the core's
/// ``RollcallCore/Broker/nextDeadline`` (login timeouts, held sessions, presence intervals, …),
/// the transport's heartbeat checks and the shutdown grace periods. ``target(now:coreDeadline:heartbeatCheck:heartbeatSlackMs:drainDeadline:webhookDeadline:)``
/// picks the earliest; ``arm(at:now:)`` re-arms only when it moved. Monotonic milliseconds.
struct DeadlineTimer {
    private var timer: ServiceTimer?
    /// The moment the timer is armed for (nil: not armed).
    private(set) var armedAt: Int64?

    /// Gives the timer its lws timer once the context exists.
    mutating func attach(_ timer: ServiceTimer) {
        self.timer = timer
    }

    /// Cancels and drops the lws timer (before the context is destroyed).
    mutating func detach() {
        timer?.cancel()
        timer = nil
        armedAt = nil
    }

    /// The timer fired: it is no longer armed.
    mutating func fired() {
        armedAt = nil
    }

    /// Arms the timer for `target` (nil: cancels it); does nothing when it is armed for that
    /// moment already.
    mutating func arm(at target: Int64?, now: Int64) {
        guard let timer else { return }
        guard let target else {
            if armedAt != nil {
                timer.cancel()
                armedAt = nil
            }
            return
        }
        guard armedAt != target else { return }
        armedAt = target
        timer.schedule(inMilliseconds: max(0, target - now))
    }

    /// The earliest of: the core's deadline; the next heartbeat check, coalesced (waking
    /// `heartbeatSlackMs` late lets one wake-up serve every connection due in that window, so
    /// n connections cost a bounded number of wake-ups per second instead of n / interval);
    /// the shutdown's grace deadline while draining (not once it passed while webhooks are
    /// still awaited); the end of the webhooks' grace period, once, while it is ahead (a
    /// deadline already passed must not re-arm the timer at once, over and over).
    static func target(
        now: Int64, coreDeadline: Int64?, heartbeatCheck: Int64?, heartbeatSlackMs: Int64,
        drainDeadline: Int64?, webhookDeadline: Int64?
    ) -> Int64? {
        var target = coreDeadline
        if let check = heartbeatCheck {
            let coalesced = check + heartbeatSlackMs
            target = min(target ?? coalesced, coalesced)
        }
        if let drainDeadline, webhookDeadline == nil || drainDeadline > now {
            target = min(target ?? drainDeadline, drainDeadline)
        }
        if let webhookDeadline, webhookDeadline > now {
            target = min(target ?? webhookDeadline, webhookDeadline)
        }
        return target
    }
}
