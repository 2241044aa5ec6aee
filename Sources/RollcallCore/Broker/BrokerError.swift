import RollcallProtocol

/// A request failed: the reply carries ``CodedError/code`` (the wire's ``ErrorCode``),
/// ``CodedError/message`` and, for `RATE_LIMITED` and `UNAVAILABLE`, ``CodedError/retryAfterMs``.
/// Thrown by request handlers before they change anything, so a failed request leaves the
/// broker as it was.
public typealias BrokerError = CodedError<ErrorCode>

extension BrokerError {
    package static func rateLimited(_ what: String, _ retry: RetryAfter) -> BrokerError {
        BrokerError(.rateLimited, "\(what): retry in \(retry.milliseconds) ms", retryAfterMs: retry.milliseconds)
    }
}
