/// A token bucket: `capacity` tokens, refilled at `ratePerSecond`. Time comes from the caller.
struct TokenBucket: Sendable, Equatable {
    /// Most tokens the bucket holds.
    public let capacity: Double
    /// Tokens added per second.
    let ratePerSecond: Double
    private var tokens: Double
    private var updatedAt: Timestamp

    /// A full bucket as of `now`.
    public init(capacity: Double, ratePerSecond: Double, now: Timestamp) {
        self.capacity = capacity
        self.ratePerSecond = ratePerSecond
        self.tokens = capacity
        self.updatedAt = now
    }

    /// Takes one token; on refusal returns the milliseconds until one is available.
    public mutating func take(now: Timestamp) -> Result<Void, RetryAfter> {
        refill(now: now)
        if tokens >= 1 {
            tokens -= 1
            return .success(())
        }
        let missing = 1 - tokens
        let waitMs = ratePerSecond > 0 ? Int((missing / ratePerSecond * 1000).rounded(.up)) : Int.max / 2
        return .failure(RetryAfter(milliseconds: max(1, waitMs)))
    }

    private mutating func refill(now: Timestamp) {
        guard now > updatedAt else { return }
        tokens = min(capacity, tokens + Double(now - updatedAt) / 1000 * ratePerSecond)
        updatedAt = now
    }
}

/// How long to wait before retrying.
struct RetryAfter: Error, Sendable, Equatable {
    /// Milliseconds.
    public let milliseconds: Int
}
