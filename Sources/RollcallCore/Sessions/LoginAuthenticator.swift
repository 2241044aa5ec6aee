/// What a login is allowed to do, from its token.
public struct Grant: Sendable, Equatable {
    /// Glob patterns (`room:*`) limiting `join`, `publish` and `setState`; nil allows every channel.
    var channelPatterns: [String]?

    /// A grant with no channel limit.
    static let unlimited = Grant(channelPatterns: nil)

    public init(channelPatterns: [String]?) { self.channelPatterns = channelPatterns }
}

/// Checks a login's token (PROTOCOL §3, `auth.mode`).
public protocol LoginAuthenticator {
    /// Accepts or refuses `userId` with `token` at `now`; refusal is `UNAUTHORIZED`.
    func authenticate(userId: Name, token: String?, now: Timestamp) -> Result<Grant, BrokerError>
}

/// `auth.mode: none`: every user id is accepted, with no channel limit.
struct OpenAuthenticator: LoginAuthenticator {
    public init() {}
    func authenticate(userId: Name, token: String?, now: Timestamp) -> Result<Grant, BrokerError> {
        .success(.unlimited)
    }
}
