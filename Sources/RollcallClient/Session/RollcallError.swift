import RollcallProtocol

/// An error of the async API: the broker's error reply (with its protocol ``ErrorCode``), a
/// failure of the connection, a result of the wrong shape, or a reader that fell behind. Every
/// case has a stable ``code``.
public enum RollcallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broker answered with an error reply. `code` is nil for a code this client does not
    /// know (`codeText` keeps it); `retryAfterMs` comes with `RATE_LIMITED` and `UNAVAILABLE`.
    case server(code: ErrorCode?, codeText: String, message: String, retryAfterMs: Int?)
    /// The connection failed, closed before the reply (code `CLOSED`), or the reply did not come
    /// in time (code `TIMEOUT`, PROTOCOL §3 1.2).
    case connection(ClientError)
    /// The reply's `result` did not have the expected shape.
    case unexpectedResult(op: String, result: String)
    /// An ``EventStream`` reader fell more than `limit` events behind and was ended (code `SLOW_READER`).
    case slowReader(limit: Int)

    /// A stable short code: the protocol error code, or the client's.
    public var code: String {
        switch self {
        case .server(_, let text, _, _): text
        case .connection(let error): error.code
        case .unexpectedResult: "UNEXPECTED_RESULT"
        case .slowReader: "SLOW_READER"
        }
    }

    /// The broker's `retryAfterMs` (`RATE_LIMITED`, `UNAVAILABLE`), nil otherwise.
    public var retryAfterMs: Int? {
        if case .server(_, _, _, let retry) = self { return retry }
        return nil
    }

    public var description: String {
        switch self {
        case .server(_, let text, let message, let retry): "\(text): \(message)" + (retry.map { " (retry after \($0) ms)" } ?? "")
        case .connection(let error): error.description
        case .unexpectedResult(let op, let result): "unexpected \(op) result: \(result)"
        case .slowReader(let limit): "this event reader fell more than \(limit) events behind and was ended"
        }
    }

    init(reply: Reply) {
        self = .server(code: reply.errorCode, codeText: reply.errorCodeText ?? "UNKNOWN",
                       message: reply.errorMessage ?? "", retryAfterMs: reply.retryAfterMs)
    }
}
