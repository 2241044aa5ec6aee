import RollcallProtocol

/// The claims set of a token whose signature verified (PROTOCOL §3): a JSON object with string
/// `sub`, numeric `exp`, optional numeric `nbf` and `iat`, optional `channels` and `users`
/// arrays of strings, optional `info` object of at most `maxInfoBytes` encoded.
extension JWTVerifier {
    /// The claims of `payload`, or the first one that is missing or wrong.
    static func claims(_ payload: JSONObject, maxInfoBytes: Int) -> Result<JWTClaims, JWTRefusal> {
        guard let subValue = payload["sub"] else { return .failure(.missingClaim("sub")) }
        guard let subject = subValue.stringValue else { return .failure(.invalidClaim("sub", "a string")) }
        guard let expValue = payload["exp"] else { return .failure(.missingClaim("exp")) }
        let expiresAt: Double, notBefore: Double?, issuedAt: Double?
        switch (seconds(expValue, "exp"), optionalSeconds(payload["nbf"], "nbf"), optionalSeconds(payload["iat"], "iat")) {
        case (.failure(let refusal), _, _), (_, .failure(let refusal), _), (_, _, .failure(let refusal)):
            return .failure(refusal)
        case (.success(let exp), .success(let nbf), .success(let iat)):
            (expiresAt, notBefore, issuedAt) = (exp, nbf, iat)
        }
        let channels: [String]?, users: [String]?
        switch (patterns(payload["channels"], "channels"), patterns(payload["users"], "users")) {
        case (.failure(let refusal), _), (_, .failure(let refusal)):
            return .failure(refusal)
        case (.success(let channelPatterns), .success(let userPatterns)):
            (channels, users) = (channelPatterns, userPatterns)
        }
        var info: [UInt8]?
        if let infoValue = payload["info"] {
            guard infoValue.objectValue != nil else { return .failure(.invalidClaim("info", "a JSON object")) }
            let encoded = infoValue.encoded()
            guard encoded.count <= maxInfoBytes else {
                return .failure(.invalidClaim("info", "at most \(maxInfoBytes) bytes encoded (auth.maxInfoBytes), not \(encoded.count)"))
            }
            info = encoded
        }
        return .success(JWTClaims(subject: subject, expiresAt: expiresAt, notBefore: notBefore,
                                  issuedAt: issuedAt, channels: channels, users: users, info: info))
    }

    /// An optional array of glob patterns (`channels`, `users`).
    private static func patterns(_ value: JSON?, _ name: String) -> Result<[String]?, JWTRefusal> {
        guard let value else { return .success(nil) }
        let patterns = value.arrayValue?.compactMap(\.stringValue)
        guard let patterns, patterns.count == value.arrayValue?.count else {
            return .failure(.invalidClaim(name, "an array of strings"))
        }
        return .success(patterns)
    }

    /// A NumericDate: a finite JSON number of seconds.
    private static func seconds(_ value: JSON, _ name: String) -> Result<Double, JWTRefusal> {
        guard let seconds = value.numberValue?.doubleValue, seconds.isFinite else {
            return .failure(.invalidClaim(name, "a number of seconds since the epoch"))
        }
        return .success(seconds)
    }

    private static func optionalSeconds(_ value: JSON?, _ name: String) -> Result<Double?, JWTRefusal> {
        guard let value else { return .success(nil) }
        return seconds(value, name).map { $0 }
    }
}
