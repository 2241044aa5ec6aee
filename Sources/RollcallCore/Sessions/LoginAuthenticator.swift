import RollcallProtocol

/// What a login (or a `refresh`) is allowed to do, from its token (PROTOCOL §3).
public struct Grant: Sendable, Equatable {
    /// Glob patterns (`room:*`) limiting `join`, `publish`, `setState` and (1.1) the reads of a
    /// channel: `getOnlineUsers`, `getState`, the list `getUserChannels` returns; nil allows every channel.
    var channelPatterns: [String]?
    /// Glob patterns of user ids whose status the session may read (`users` claim, 1.1);
    /// nil allows every user. The session's own user is always allowed.
    var userPatterns: [String]?
    /// The issuer's `info` object as encoded JSON bytes (1.1); nil when the token has none.
    package var info: [UInt8]?
    /// The token's `exp` in wall milliseconds; nil when tokens do not expire (`auth.mode` `none`).
    /// Last, so that the fields after a grant in ``Session`` use the bytes after its tag.
    var expiresAt: Timestamp?

    /// A grant with no limit, no expiry and no `info`.
    static let unlimited = Grant(channelPatterns: nil)

    public init(channelPatterns: [String]?, userPatterns: [String]? = nil, expiresAt: Timestamp? = nil, info: [UInt8]? = nil) {
        self.channelPatterns = channelPatterns
        self.userPatterns = userPatterns
        self.expiresAt = expiresAt
        self.info = info
    }
}

/// Checks a login's token (PROTOCOL §3, `auth.mode`).
public protocol LoginAuthenticator {
    /// Accepts or refuses `userId` with `token` at `now`; refusal is `UNAUTHORIZED`.
    func authenticate(userId: Name, token: String?, now: Timestamp) -> Result<Grant, BrokerError>
    /// ``authenticate(userId:token:now:)`` with the refusal's stable reason: what the broker
    /// calls, so that `/metrics` counts refusals by reason.
    func check(userId: Name, token: String?, now: Timestamp) -> Result<Grant, TokenRefusal>
    /// True when sessions carry tokens that can be refreshed (`refresh` is `INVALID_REQUEST` otherwise).
    var checksTokens: Bool { get }
    /// *(1.2)* Verifies later tokens with `set` as the keys of `source` (``InboundEvent/keySet(_:_:)``).
    mutating func useKeySet(_ set: JWKSet, from source: JWKSetSource)
}

extension LoginAuthenticator {
    /// Authenticators that do not read tokens do not refresh them.
    public var checksTokens: Bool { false }

    /// ``authenticate(userId:token:now:)``, every refusal with the reason `refused`.
    public func check(userId: Name, token: String?, now: Timestamp) -> Result<Grant, TokenRefusal> {
        authenticate(userId: userId, token: token, now: now).mapError { TokenRefusal(reason: "refused", error: $0) }
    }

    /// Authenticators without keys ignore key sets.
    public mutating func useKeySet(_ set: JWKSet, from source: JWKSetSource) {}
}

/// A token refused at login or refresh: the error the request is answered with, and a stable
/// reason for `/metrics` (``JWTRefusal/code`` in jwt mode).
public struct TokenRefusal: Error, Sendable, Equatable {
    /// Stable reason, e.g. `expired`, `unknown_kid`.
    public let reason: String
    /// The `UNAUTHORIZED` error.
    public let error: BrokerError
}

/// `auth.mode: none`: every user id is accepted, with no channel limit.
package struct OpenAuthenticator: LoginAuthenticator {
    public init() {}
    package func authenticate(userId: Name, token: String?, now: Timestamp) -> Result<Grant, BrokerError> {
        .success(.unlimited)
    }
}
