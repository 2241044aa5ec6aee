/// A token bucket: `capacity` tokens, refilled at `ratePerSecond`. Time comes from the caller.
///
/// The capacity and rate are the caller's configuration and are given at each ``take(now:capacity:ratePerSecond:)``
/// instead of being stored in every bucket: one bucket per connection, so 16 bytes less each
/// (one entry of the broker's connection table).
package struct TokenBucket: Sendable, Equatable {
    private var tokens: Double
    private var updatedAt: Timestamp

    /// A full bucket of `capacity` tokens as of `now`.
    package init(capacity: Double, now: Timestamp) {
        self.tokens = capacity
        self.updatedAt = now
    }

    /// Takes one token from a bucket of `capacity` refilled at `ratePerSecond`; on refusal
    /// returns the milliseconds until one is available.
    package mutating func take(now: Timestamp, capacity: Double, ratePerSecond: Double) -> Result<Void, RetryAfter> {
        if now > updatedAt {
            tokens = min(capacity, tokens + Double(now - updatedAt) / 1000 * ratePerSecond)
            updatedAt = now
        }
        if tokens >= 1 {
            tokens -= 1
            return .success(())
        }
        let missing = 1 - tokens
        let waitMs = ratePerSecond > 0 ? Int((missing / ratePerSecond * 1000).rounded(.up)) : Int.max / 2
        return .failure(RetryAfter(milliseconds: max(1, waitMs)))
    }
}

/// How long to wait before retrying.
package struct RetryAfter: Error, Sendable, Equatable {
    /// Milliseconds.
    public let milliseconds: Int
}
