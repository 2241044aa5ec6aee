/// `auth.mode: jwt` (PROTOCOL §3): a login needs a token whose `sub` is its `userId`, HS256
/// with a configured secret or (1.2) RS256, ES256 or EdDSA with a key of a JWK Set; the
/// token's `exp`, `channels`, `users` and `info` claims become the session's ``Grant``. Every
/// refusal is `UNAUTHORIZED` with a message naming the claim or the reason (see ``JWTRefusal``).
package struct JWTAuthenticator: LoginAuthenticator, Sendable {
    /// Clock skew tolerated on `exp` and `nbf` when the configuration does not say: 30 s.
    static let defaultClockSkewSeconds = 30.0

    /// The token checker.
    private(set) var verifier: JWTVerifier

    /// Accepts tokens signed with `secret`, tolerating `clockSkewSeconds` of clock difference.
    public init(secret: String, clockSkewSeconds: Double = JWTAuthenticator.defaultClockSkewSeconds, maxInfoBytes: Int = 1024) {
        self.init(secrets: [secret], clockSkewSeconds: clockSkewSeconds, maxInfoBytes: maxInfoBytes)
    }

    /// Accepts HS256 tokens signed with any of `secrets` (`auth.secret` and `auth.secrets`,
    /// 1.2; may be empty when key sets come), and the tokens of the key sets it is given
    /// (``useKeySet(_:from:)``).
    public init(secrets: [String], clockSkewSeconds: Double = JWTAuthenticator.defaultClockSkewSeconds, maxInfoBytes: Int = 1024) {
        verifier = JWTVerifier(secrets: secrets, clockSkewSeconds: clockSkewSeconds, maxInfoBytes: maxInfoBytes)
    }

    /// RS256, ES256 and EdDSA tokens are verified with `set` as the keys of `source` from now on.
    package mutating func useKeySet(_ set: JWKSet, from source: JWKSetSource) {
        verifier.useKeySet(set, from: source)
    }

    /// Tokens are refreshable (`refresh`).
    package var checksTokens: Bool { true }

    package func authenticate(userId: Name, token: String?, now: Timestamp) -> Result<Grant, BrokerError> {
        grant(userId: userId, token: token, now: now).mapError(\.brokerError)
    }

    package func check(userId: Name, token: String?, now: Timestamp) -> Result<Grant, TokenRefusal> {
        grant(userId: userId, token: token, now: now).mapError { TokenRefusal(reason: $0.code, error: $0.brokerError) }
    }

    /// Latest `exp` kept, in ms (about the year 318,000): a larger one counts as this, so the
    /// expiry arithmetic never overflows.
    static let latestExpiryMs: Double = 1e16

    /// A NumericDate `exp` (finite, checked by the verifier) as whole milliseconds, clamped to
    /// `0...latestExpiryMs`.
    static func milliseconds(_ seconds: Double) -> Timestamp {
        Timestamp(min(max(seconds * 1000, 0), latestExpiryMs).rounded())
    }

    /// The grant for `userId` with `token` at `now`, or why it is refused.
    func grant(userId: Name, token: String?, now: Timestamp) -> Result<Grant, JWTRefusal> {
        guard let token else { return .failure(.missingToken) }
        return verifier.verify(token, now: now).flatMap { claims in
            // Byte-exact, as every user id comparison (not String's canonical equivalence).
            guard Name(unchecked: claims.subject) == userId else { return .failure(.subjectMismatch) }
            return .success(Grant(channelPatterns: claims.channels, userPatterns: claims.users,
                                  expiresAt: Self.milliseconds(claims.expiresAt), info: claims.info))
        }
    }
}
