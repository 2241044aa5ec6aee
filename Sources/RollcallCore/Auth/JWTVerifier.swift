import RollcallProtocol

/// Verifies JSON Web Tokens in compact serialization (RFC 7519, RFC 7515): HS256 against a few
/// shared secrets (`auth.secret` and `auth.secrets`: any of them signs), RS256, ES256 and
/// EdDSA against the public keys of the JWK Sets (`auth.jwksFile`, `auth.jwksUrl`; PROTOCOL
/// §3, 1.2). Pure: no I/O, the caller passes the time and hands in new key sets
/// (``useKeySet(_:from:)``).
///
/// Order of checks: three strict base64url segments; the header is a JSON object with `alg`
/// exactly one of HS256, RS256, ES256, EdDSA (so `none` is refused), `typ` (if present)
/// exactly `JWT`, `kid` (if present) a string, and no `crit`; the signature (`JWTVerifier+Signature.swift`:
/// HS256 with every secret, whatever the `kid`; the others with the key the `kid` names, or
/// without `kid` with every key of that algorithm); only then is the claims set parsed
/// (`JWTVerifier+Claims.swift`) and the time checked. A header or claims set that names a
/// member twice is refused rather than guessed at.
package struct JWTVerifier: Sendable {
    /// The secrets and key sets signatures are checked with.
    private(set) var keyRing: JWTKeyRing
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

    /// A verifier accepting HS256 tokens signed with any of `secrets` (in order; every secret
    /// is tried, so how long a check takes does not say which one signed), and no key set yet.
    public init(secrets: [String], clockSkewSeconds: Double, maxInfoBytes: Int = 1024) {
        keyRing = JWTKeyRing(secrets: secrets)
        self.maxInfoBytes = maxInfoBytes
        let seconds = clockSkewSeconds.isFinite ? min(max(0, clockSkewSeconds), 86_400) : 0
        clockSkewMs = Int64((seconds * 1000).rounded())
    }

    /// Verifies later tokens with `set` as the keys of `source` (the other source's keys stay).
    mutating func useKeySet(_ set: JWKSet, from source: JWKSetSource) {
        keyRing.use(set, from: source)
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
        let header: Header
        switch Self.object(headerBytes, part: "header").flatMap(Self.header) {
        case .success(let checked): header = checked
        case .failure(let refusal): return .failure(refusal)
        }

        let signingInput = Array(token.utf8[..<segments[1].endIndex])
        if let refusal = checkSignature(signature, of: signingInput, header: header) { return .failure(refusal) }

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

    // MARK: - Header

    /// What the verifier takes from a token's header.
    struct Header {
        /// `alg`: one of the accepted algorithms.
        let algorithm: JWTAlgorithm
        /// `kid`, when present.
        let kid: String?
    }

    /// `bytes` parsed as a JSON object whose member names are all distinct.
    static func object(_ bytes: [UInt8], part: String) -> Result<JSONObject, JWTRefusal> {
        let value: JSON
        do { value = try JSONParser.parse(bytes) } catch {
            return .failure(.malformed("\(part) is not JSON"))
        }
        guard let object = value.objectValue else { return .failure(.malformed("\(part) is not a JSON object")) }
        if let repeated = object.repeatedMemberName { return .failure(.malformed("\(part) repeats the member \(repeated)")) }
        return .success(object)
    }

    private static func header(_ header: JSONObject) -> Result<Header, JWTRefusal> {
        guard let alg = header["alg"]?.stringValue else { return .failure(.unsupportedAlgorithm(nil)) }
        guard let algorithm = JWTAlgorithm(exactly: alg) else { return .failure(.unsupportedAlgorithm(alg)) }
        if let typ = header["typ"], !(typ.stringValue.map { $0.utf8.elementsEqual("JWT".utf8) } ?? false) {
            return .failure(.unsupportedType)
        }
        if header["crit"] != nil { return .failure(.unsupportedCriticalHeader) }
        var kid: String?
        if let value = header["kid"] {
            guard let text = value.stringValue else { return .failure(.malformed("header kid is not a string")) }
            kid = text
        }
        return .success(Header(algorithm: algorithm, kid: kid))
    }
}
