/// The registered claims of a verified token that the broker uses (RFC 7519 §4.1), plus the
/// Rollcall `channels`, `users` and `info` claims. Times are NumericDate: seconds since the Unix epoch, possibly fractional.
package struct JWTClaims: Sendable, Equatable {
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
    /// `users` (1.1): glob patterns of user ids whose status may be read; nil allows every user.
    public var users: [String]?
    /// `info` (1.1): the issuer's JSON object about the user, encoded; nil when absent.
    public var info: [UInt8]?

    public init(subject: String, expiresAt: Double, notBefore: Double? = nil, issuedAt: Double? = nil, channels: [String]? = nil,
                users: [String]? = nil, info: [UInt8]? = nil) {
        self.subject = subject
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.channels = channels
        self.users = users
        self.info = info
    }
}
