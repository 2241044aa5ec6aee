import RollcallProtocol

/// An error of the async API: the broker's error reply (with its protocol ``ErrorCode``) or a
/// failure of the connection itself.
public enum RollcallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broker answered with an error reply. `code` is nil for a code this client does not
    /// know (`codeText` keeps it); `retryAfterMs` comes with `RATE_LIMITED`.
    case server(code: ErrorCode?, codeText: String, message: String, retryAfterMs: Int?)
    /// The connection failed, closed, or the reply did not arrive.
    case connection(ClientError)
    /// The reply's `result` did not have the expected shape.
    case unexpectedResult(op: String, result: String)

    /// A stable short code: the protocol error code, or the client's.
    public var code: String {
        switch self {
        case .server(_, let text, _, _): text
        case .connection(let error): error.code
        case .unexpectedResult: "UNEXPECTED_RESULT"
        }
    }

    public var description: String {
        switch self {
        case .server(_, let text, let message, let retry): "\(text): \(message)" + (retry.map { " (retry after \($0) ms)" } ?? "")
        case .connection(let error): error.description
        case .unexpectedResult(let op, let result): "unexpected \(op) result: \(result)"
        }
    }

    init(reply: Reply) {
        self = .server(code: reply.errorCode, codeText: reply.errorCodeText ?? "UNKNOWN",
                       message: reply.errorMessage ?? "", retryAfterMs: reply.retryAfterMs)
    }
}
