/// A stable, machine-readable error code: its raw value is what logs, metrics and the wire show,
/// and it never changes meaning.
public protocol StableErrorCode: RawRepresentable, Sendable, Hashable where RawValue == String {
    /// Whether an error's description starts with its code (`CODE: message`); false: the
    /// message alone (a start error whose message already says what to fix).
    static var descriptionStartsWithCode: Bool { get }
}

extension StableErrorCode {
    /// `CODE: message`.
    public static var descriptionStartsWithCode: Bool { true }
}

/// An error with a stable ``code`` and a ``message`` for people: the one shape of every
/// module's errors (`BrokerError` for requests, `RedisError`, `ClusterError`, `ServerError`,
/// `JWKSetError`), each a `CodedError` of its own code enum.
public struct CodedError<SomeCode: StableErrorCode>: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error's code enum (`RedisError.Code` is `RedisErrorCode`).
    public typealias Code = SomeCode

    /// Stable machine-readable code.
    public let code: Code
    /// Human-readable detail.
    public let message: String
    /// When a retry may succeed, in milliseconds (`RATE_LIMITED`, `UNAVAILABLE`); nil: no hint.
    public let retryAfterMs: Int?

    /// An error with `code` and `message`, and when to retry if known.
    public init(_ code: Code, _ message: String, retryAfterMs: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    public var description: String { Code.descriptionStartsWithCode ? "\(code.rawValue): \(message)" : message }
}

extension ErrorCode: StableErrorCode {}
