import Crypto
import RollcallProtocol

/// Mints HS256 tokens for development (`rollcall-cli token`) and tests: header
/// `{"alg":"HS256","typ":"JWT"}`, claims `sub`, `iat`, `exp` and, when given, `channels`,
/// `users` and `info` (PROTOCOL §3).
public enum JWTMinter {
    /// A token for `userId`, valid from `now` for `ttlSeconds`, limited to `channels` and
    /// `users` glob patterns when not nil, carrying the `info` object when not nil, signed
    /// with the UTF-8 bytes of `secret`.
    public static func mint(secret: String, userId: String, channels: [String]? = nil, users: [String]? = nil,
                            info: JSONObject? = nil, ttlSeconds: Int, now: Timestamp) -> String {
        let issuedAt = Int(now.floorDividedBy(1000))
        var claims: [(key: String, value: JSON)] = [
            ("sub", .string(userId)),
            ("iat", .int(issuedAt)),
            ("exp", .int(issuedAt + ttlSeconds)),
        ]
        if let channels { claims.append(("channels", .array(channels.map(JSON.string)))) }
        if let users { claims.append(("users", .array(users.map(JSON.string)))) }
        if let info { claims.append(("info", .object(info))) }
        let header: JSON = ["alg": "HS256", "typ": "JWT"]
        return sign(header: header.encoded(), payload: JSON.object(JSONObject(claims)).encoded(), secret: secret)
    }

    /// `header` and `payload` (raw bytes, not checked) as a compact JWS signed with HMAC-SHA256.
    /// Tests use it to sign tokens that are deliberately wrong in other ways.
    public static func sign(header: [UInt8], payload: [UInt8], secret: String) -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(signingInput.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return signingInput + "." + Base64URL.encode(Array(mac))
    }
}

private extension Int64 {
    /// Division rounding toward negative infinity.
    func floorDividedBy(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}
