import RollcallProtocol
@testable import RollcallCore

/// Shared material for the auth tests: one secret, one instant, and helpers that build
/// tokens — signed correctly or deliberately wrong in one way.
enum AuthFixture {
    static let secret = "rollcall-test-secret"
    /// The ManualClock's default start, in ms.
    static let now: Timestamp = ManualClock().now
    /// `now` in whole seconds.
    static var nowSeconds: Int { Int(now / 1000) }

    /// A correctly signed token with the raw JSON texts `header` and `payload`.
    static func signed(header: String = #"{"alg":"HS256","typ":"JWT"}"#, _ payload: String, secret: String = secret) -> String {
        JWTMinter.sign(header: Array(header.utf8), payload: Array(payload.utf8), secret: secret)
    }

    /// A token for `sub` expiring `ttl` seconds after `now`, with optional extra claims (raw JSON members).
    static func token(sub: String = "alice", ttl: Int = 3600, extra: String = "") -> String {
        let more = extra.isEmpty ? "" : "," + extra
        return signed(#"{"sub":\#(JSON.string(sub).compactString),"exp":\#(nowSeconds + ttl)\#(more)}"#)
    }

    /// `token` with its payload segment replaced by `payload` (the signature kept).
    static func replacingPayload(of token: String, with payload: String) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        return parts[0] + "." + Base64URL.encode(Array(payload.utf8)) + "." + parts[2]
    }

    /// Raw segments joined with dots, each base64url-encoded from its text.
    static func raw(_ segments: String...) -> String {
        segments.map { Base64URL.encode(Array($0.utf8)) }.joined(separator: ".")
    }

    static let authenticator = JWTAuthenticator(secret: secret)

    /// What the authenticator says about `token` for `userId` at `now`, without the expiry
    /// (``expiry(_:)`` reads it; TokenLifetimeTests check what the broker does with it).
    static func check(_ token: String?, userId: String = "alice", at time: Timestamp = now,
                      authenticator: JWTAuthenticator = authenticator) -> Result<Grant, JWTRefusal> {
        authenticator.grant(userId: Name(unchecked: userId), token: token, now: time).map { grant in
            var access = grant
            access.expiresAt = nil
            return access
        }
    }

    /// The `exp` (ms) of the grant `token` gives, or nil when it is refused.
    static func expiry(_ token: String, userId: String = "alice", at time: Timestamp = now) -> Timestamp? {
        try? authenticator.grant(userId: Name(unchecked: userId), token: token, now: time).get().expiresAt
    }

    /// The refusal for `token`, or nil if it was accepted.
    static func refusal(_ token: String?, userId: String = "alice", at time: Timestamp = now) -> JWTRefusal? {
        if case .failure(let refusal) = check(token, userId: userId, at: time) { return refusal }
        return nil
    }
}
