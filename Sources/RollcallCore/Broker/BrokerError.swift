import RollcallProtocol

/// A request failed: the reply carries ``code`` and ``message``. Thrown by request handlers
/// before they change anything, so a failed request leaves the broker as it was.
public struct BrokerError: Error, Sendable, Equatable {
    /// Stable code for the wire.
    public let code: ErrorCode
    /// Human text.
    public let message: String
    /// For `RATE_LIMITED`: when to retry.
    public let retryAfterMs: Int?

    public init(_ code: ErrorCode, _ message: String, retryAfterMs: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    package static func rateLimited(_ what: String, _ retry: RetryAfter) -> BrokerError {
        BrokerError(.rateLimited, "\(what): retry in \(retry.milliseconds) ms", retryAfterMs: retry.milliseconds)
    }
}
