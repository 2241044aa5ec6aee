/// What ``RedisConnection/onStateChange`` and ``RedisSubscriber/onStateChange`` report.
public enum RedisConnectionState: Equatable {
    /// The link is up and answering (after `AUTH`/`SELECT`, or with every channel subscribed).
    case connected
    /// The link is down: `reason` says why. The client keeps reconnecting with backoff.
    case disconnected(RedisError)

    /// True for ``connected``.
    public var isConnected: Bool { self == .connected }
}

/// Timing of a Redis client (PROTOCOL §9: `cluster.nodeTimeoutSeconds`).
public struct RedisTimings: Equatable {
    /// No command (nor a connect, nor a subscriber probe) waits longer than this; past it
    /// the link is declared down and replaced. Default 5 s.
    public var timeoutSeconds: Double
    /// First reconnect delay after a loss; doubled after each failed attempt. Default 50 ms.
    public var initialBackoffSeconds: Double
    /// Longest reconnect delay. Default 2 s.
    public var maxBackoffSeconds: Double
    /// How often the subscriber checks its link with a probe message. Default 1 s.
    public var probeIntervalSeconds: Double

    /// Timings with the given values (each defaulted as documented).
    public init(timeoutSeconds: Double = 5, initialBackoffSeconds: Double = 0.05,
                maxBackoffSeconds: Double = 2, probeIntervalSeconds: Double = 1) {
        self.timeoutSeconds = timeoutSeconds
        self.initialBackoffSeconds = initialBackoffSeconds
        self.maxBackoffSeconds = maxBackoffSeconds
        self.probeIntervalSeconds = probeIntervalSeconds
    }
}
