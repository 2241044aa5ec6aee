/// The registered claims of a verified token that the broker uses (RFC 7519 §4.1), plus the
/// Rollcall `channels` claim. Times are NumericDate: seconds since the Unix epoch, possibly fractional.
struct JWTClaims: Sendable, Equatable {
    /// `sub`: the user id the token was issued to.
    public var subject: String
    /// `exp`: the token is refused at and after this time (less the clock skew allowance).
    public var expiresAt: Double
    /// `nbf`: the token is refused before this time (less the clock skew allowance).
    var notBefore: Double?
    /// `iat`: when the token was issued; informational only.
    var issuedAt: Double?
    /// `channels`: glob patterns limiting `join`, `publish` and `setState`; nil allows every channel.
    public var channels: [String]?

    public init(subject: String, expiresAt: Double, notBefore: Double? = nil, issuedAt: Double? = nil, channels: [String]? = nil) {
        self.subject = subject
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.channels = channels
    }
}
