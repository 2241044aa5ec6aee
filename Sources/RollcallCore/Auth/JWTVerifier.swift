import Crypto
import RollcallProtocol

/// Verifies HS256 JSON Web Tokens in compact serialization (RFC 7519, RFC 7515) against a
/// few shared secrets (`auth.secret` and `auth.secrets`: any of them signs). Pure: no I/O,
/// the caller passes the time.
///
/// Order of checks: three strict base64url segments; the header is a JSON object with
/// `alg` exactly `HS256`, `typ` (if present) exactly `JWT` and no `crit`; the signature
/// (HMAC-SHA256 over the first two segments, compared in constant time); only then is the
/// claims set parsed: a JSON object with string `sub`, numeric `exp`, optional numeric
/// `nbf` and `iat`, optional `channels` and `users` arrays of strings, optional `info`
/// object of at most `maxInfoBytes` encoded. A header or claims set that names
/// a member twice is refused rather than guessed at.
package struct JWTVerifier: Sendable {
    /// The only accepted `alg`.
    static let algorithm = "HS256"

    /// Each secret's bytes (a `SymmetricKey` is made per check: the type is not `Sendable`).
    private let secrets: [[UInt8]]
    /// Allowed difference between the broker's clock and the issuer's, in milliseconds.
    let clockSkewMs: Int64
    /// Most bytes the `info` claim may have, encoded (`auth.maxInfoBytes`).
    let maxInfoBytes: Int

    /// A verifier for tokens signed with the UTF-8 bytes of `secret`, tolerating
    /// `clockSkewSeconds` of clock difference on `exp` and `nbf` (clamped to 0…86400;
    /// a non-finite value counts as 0).
    public init(secret: String, clockSkewSeconds: Double, maxInfoBytes: Int = 1024) {
        self.init(secrets: [secret], clockSkewSeconds: clockSkewSeconds, maxInfoBytes: maxInfoBytes)
    }

    /// A verifier accepting tokens signed with any of `secrets` (in order; every secret is
    /// tried, so how long a check takes does not say which one signed).
    public init(secrets: [String], clockSkewSeconds: Double, maxInfoBytes: Int = 1024) {
        self.secrets = secrets.map { Array($0.utf8) }
        self.maxInfoBytes = maxInfoBytes
        let seconds = clockSkewSeconds.isFinite ? min(max(0, clockSkewSeconds), 86_400) : 0
        clockSkewMs = Int64((seconds * 1000).rounded())
    }

    /// The claims of `token` if it is well formed, correctly signed and valid at `now`.
    func verify(_ token: String, now: Timestamp) -> Result<JWTClaims, JWTRefusal> {
        let segments = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            return .failure(.malformed("expected 3 dot-separated parts, found \(segments.count)"))
        }
        guard let headerBytes = Base64URL.decode(utf8: segments[0]) else {
            return .failure(.malformed("header is not base64url"))
        }
        guard let payloadBytes = Base64URL.decode(utf8: segments[1]) else {
            return .failure(.malformed("payload is not base64url"))
        }
        guard let signature = Base64URL.decode(utf8: segments[2]) else {
            return .failure(.malformed("signature is not base64url"))
        }
        let header: JSONObject
        switch Self.object(headerBytes, part: "header") {
        case .success(let object): header = object
        case .failure(let refusal): return .failure(refusal)
        }
        if let refusal = Self.checkHeader(header) { return .failure(refusal) }

        let signingInput = Array(token.utf8[..<segments[1].endIndex])
        let signedByOne = secrets.reduce(false) { found, secret in
            HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signingInput, using: SymmetricKey(data: secret)) || found
        }
        guard signedByOne else { return .failure(.badSignature) }

        let claims: JWTClaims
        switch Self.object(payloadBytes, part: "payload").flatMap({ Self.claims($0, maxInfoBytes: maxInfoBytes) }) {
        case .success(let decoded): claims = decoded
        case .failure(let refusal): return .failure(refusal)
        }
        let nowMs = Double(now), skewMs = Double(clockSkewMs)
        guard nowMs < claims.expiresAt * 1000 + skewMs else { return .failure(.expired) }
        if let notBefore = claims.notBefore, nowMs + skewMs < notBefore * 1000 {
            return .failure(.notYetValid)
        }
        return .success(claims)
    }

    // MARK: - Parts

    /// `bytes` parsed as a JSON object whose member names are all distinct.
    private static func object(_ bytes: [UInt8], part: String) -> Result<JSONObject, JWTRefusal> {
        let value: JSON
        do { value = try JSONParser.parse(bytes) } catch {
            return .failure(.malformed("\(part) is not JSON"))
        }
        guard let object = value.objectValue else { return .failure(.malformed("\(part) is not a JSON object")) }
        var seen = Set<[UInt8]>()
        for member in object.members where !seen.insert(Array(member.key.utf8)).inserted {
            return .failure(.malformed("\(part) repeats the member \(member.key)"))
        }
        return .success(object)
    }

    private static func checkHeader(_ header: JSONObject) -> JWTRefusal? {
        guard let alg = header["alg"]?.stringValue else { return .unsupportedAlgorithm(nil) }
        guard alg.utf8.elementsEqual(algorithm.utf8) else { return .unsupportedAlgorithm(alg) }
        if let typ = header["typ"], !(typ.stringValue.map { $0.utf8.elementsEqual("JWT".utf8) } ?? false) {
            return .unsupportedType
        }
        if header["crit"] != nil { return .unsupportedCriticalHeader }
        return nil
    }

    private static func claims(_ payload: JSONObject, maxInfoBytes: Int) -> Result<JWTClaims, JWTRefusal> {
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
