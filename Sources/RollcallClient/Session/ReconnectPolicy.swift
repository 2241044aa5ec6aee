/// When a ``RollcallSession`` tries again after losing its connection: exponential backoff
/// with full jitter and a cap.
public struct ReconnectPolicy: Sendable, Equatable {
    /// The first delay's upper bound, in seconds.
    public var initialDelay: Double
    /// The most any delay can be, in seconds.
    public var maxDelay: Double
    /// The factor between successive upper bounds.
    public var multiplier: Double
    /// False: no automatic reconnect (the session closes when the connection ends).
    public var enabled: Bool

    /// A policy; the defaults try after up to 0.25 s, doubling up to 30 s.
    public init(initialDelay: Double = 0.25, maxDelay: Double = 30, multiplier: Double = 2, enabled: Bool = true) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.enabled = enabled
    }

    /// The upper bound of the delay before attempt `attempt` (0-based): capped exponential.
    public func ceiling(attempt: Int) -> Double {
        min(maxDelay, initialDelay * pow(multiplier, Double(min(attempt, 62))))
    }

    /// The delay before attempt `attempt`: uniform in [ceiling / 2, ceiling] (jitter keeps
    /// many clients that lost the same broker from coming back in step).
    public func delay(attempt: Int, random: Double = Double.random(in: 0...1)) -> Double {
        let top = ceiling(attempt: attempt)
        return top / 2 + top / 2 * random
    }
}

import Foundation
