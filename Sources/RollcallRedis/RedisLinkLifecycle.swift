/// The life of a Redis client's link, for the command connection (``RedisConnection``) and the
/// subscriber (``RedisSubscriber``) alike: idle, connecting, ready, waiting to reconnect with
/// backoff, closed. Pure: every input returns the steps the owner carries out (make a link,
/// arm or cancel the reconnect timer, tell its `onStateChange`), and time comes in as a number,
/// so the machine is tested without a loop or a Redis.
///
/// What differs between the two owners stays with them: what makes a link ready (a `PING`
/// answered; every channel subscribed) and what a lost link fails (pending commands; probes).
struct RedisLinkLifecycle {
    /// Where the link is.
    enum Phase: Equatable {
        /// Not started.
        case idle
        /// A link is being made or handshaking.
        case connecting
        /// The link is up and usable.
        case ready
        /// No link; the next attempt is due at this loop time.
        case waiting(until: Double)
        /// Closed for good.
        case closed
    }

    /// What the owner must do, in order.
    enum Step: Equatable {
        /// Make a new link now.
        case connect
        /// Arm the reconnect timer (replacing an earlier schedule).
        case scheduleReconnect(after: Double)
        /// Disarm the reconnect timer.
        case cancelReconnect
        /// Tell `onStateChange`: the link went from connected to disconnected or back.
        case notify(RedisConnectionState)
    }

    private(set) var phase: Phase = .idle
    /// The latest state, updated on every loss even when connected-ness did not change.
    private(set) var state: RedisConnectionState = .disconnected(RedisError(.unavailable, "not connected yet"))
    private var backoff: Backoff
    private var reportedConnected: Bool?

    /// A lifecycle whose reconnects back off as `timings` say.
    init(timings: RedisTimings) {
        backoff = Backoff(initial: timings.initialBackoffSeconds, maximum: timings.maxBackoffSeconds)
    }

    /// True while the link is up and usable.
    var isReady: Bool { phase == .ready }
    /// True once closed.
    var isClosed: Bool { phase == .closed }
    /// True while a link is being made (the owner is still looking for where, or handshaking).
    var isConnecting: Bool { phase == .connecting }

    /// `start()`: the first connect; nothing once started or closed.
    mutating func start() -> [Step] {
        guard phase == .idle else { return [] }
        phase = .connecting
        return [.connect]
    }

    /// The reconnect timer fired.
    mutating func reconnectDue() -> [Step] {
        guard case .waiting = phase else { return [] }
        phase = .connecting
        return [.connect]
    }

    /// The link is usable: backoff starts over.
    mutating func ready() -> [Step] {
        guard phase == .connecting else { return [] }
        phase = .ready
        backoff.reset()
        return report(.connected)
    }

    /// The link (or the attempt to make one) failed with `error` at loop time `now`: wait the
    /// next backoff delay and try again. Without a link or an attempt under way only the state
    /// changes.
    mutating func lost(_ error: RedisError, now: Double) -> [Step] {
        switch phase {
        case .connecting, .ready:
            let delay = backoff.take()
            phase = .waiting(until: now + delay)
            return [.scheduleReconnect(after: delay)] + report(.disconnected(error))
        case .idle, .waiting:
            return report(.disconnected(error))
        case .closed:
            return []
        }
    }

    /// `close()`: no more attempts; a link that was up is reported down with `error`.
    mutating func close(_ error: RedisError) -> [Step] {
        guard phase != .closed else { return [] }
        let hadLink = phase == .connecting || phase == .ready
        phase = .closed
        return [.cancelReconnect] + (hadLink ? report(.disconnected(error)) : [])
    }

    /// Milliseconds until the next attempt is likely to have succeeded (the `retryAfterMs` of an
    /// `UNAVAILABLE` answer): the wait left, plus one initial backoff; at least 1.
    func retryAfterMs(now: Double) -> Int {
        var remaining = 0.0
        if case .waiting(let until) = phase { remaining = until - now }
        return max(1, Int(((remaining + backoff.initial) * 1000).rounded(.up)))
    }

    private mutating func report(_ newState: RedisConnectionState) -> [Step] {
        state = newState
        guard reportedConnected != newState.isConnected else { return [] }
        reportedConnected = newState.isConnected
        return [.notify(newState)]
    }
}
