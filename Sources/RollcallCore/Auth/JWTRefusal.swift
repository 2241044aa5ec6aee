import RollcallProtocol

/// Why a login token was refused. Every case becomes `UNAUTHORIZED` on the wire (then close
/// 4401) with ``message``; ``code`` is a stable name for logs and tests. No message ever
/// contains the secret, and none repeats the token.
package enum JWTRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// `auth.mode` is `jwt` and the login carried no `token`.
    case missingToken
    /// Not three base64url segments of a JSON object header and claims set; the reason says which part.
    case malformed(String)
    /// The header's `alg` is missing, not a string, or not one of HS256, RS256, ES256 and
    /// EdDSA (`none` included); the value, if a string.
    case unsupportedAlgorithm(String?)
    /// The header's `typ` is present and not `JWT`.
    case unsupportedType
    /// The header lists `crit` extensions, none of which this verifier understands.
    case unsupportedCriticalHeader
    /// *(1.2)* The header names a `kid` the key sets do not hold (RS256, ES256, EdDSA).
    case unknownKeyId(String)
    /// *(1.2)* The key the header's `kid` names cannot verify the header's `alg`: another key
    /// type or curve, a key limited to another `alg`, or a key the set holds but cannot use.
    /// The text says which.
    case keyMismatch(String)
    /// *(1.2)* Nothing is configured that verifies the header's `alg`: no HS256 secret, or no
    /// key of that type in the key sets.
    case noKey(JWTAlgorithm)
    /// The signature does not verify with the secrets (HS256) or the chosen keys.
    case badSignature
    /// A required claim (`sub`, `exp`) is absent.
    case missingClaim(String)
    /// A claim has the wrong JSON type or an unusable value; the reason says what was expected.
    case invalidClaim(String, String)
    /// `sub` names a different user than the login's `userId`.
    case subjectMismatch
    /// `exp` is in the past, beyond the allowed clock skew.
    case expired
    /// `nbf` is in the future, beyond the allowed clock skew.
    case notYetValid

    /// Stable short name of the case.
    public var code: String {
        switch self {
        case .missingToken: "missing_token"
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported_algorithm"
        case .unsupportedType: "unsupported_type"
        case .unsupportedCriticalHeader: "unsupported_critical_header"
        case .unknownKeyId: "unknown_kid"
        case .keyMismatch: "key_mismatch"
        case .noKey: "no_key"
        case .badSignature: "bad_signature"
        case .missingClaim: "missing_claim"
        case .invalidClaim: "invalid_claim"
        case .subjectMismatch: "subject_mismatch"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        }
    }

    /// Every ``code``, in the order of the cases (the `reason` label values of
    /// `rollcall_logins_refused_total`).
    static let allCodes = [
        "missing_token", "malformed", "unsupported_algorithm", "unsupported_type", "unsupported_critical_header",
        "unknown_kid", "key_mismatch", "no_key", "bad_signature", "missing_claim", "invalid_claim",
        "subject_mismatch", "expired", "not_yet_valid",
    ]

    /// Human text for the `UNAUTHORIZED` reply.
    public var message: String {
        switch self {
        case .missingToken: "a token is required to log in"
        case .malformed(let reason): "malformed token: \(reason)"
        case .unsupportedAlgorithm(let alg?): "token alg \(Self.quoted(alg)) is not accepted; \(JWTAlgorithm.acceptedNames) are"
        case .unsupportedAlgorithm(nil): "token header has no string alg; \(JWTAlgorithm.acceptedNames) are accepted"
        case .unsupportedType: "token header typ must be \"JWT\""
        case .unsupportedCriticalHeader: "token header crit lists extensions this broker does not support"
        case .unknownKeyId(let kid): "token kid \(Self.quoted(kid)) is not in the key set"
        case .keyMismatch(let reason): "token key does not fit: \(reason)"
        case .noKey(.hs256): "no HS256 secret is configured (auth.secret, auth.secrets)"
        case .noKey(let algorithm): "no key of the key set verifies \(algorithm.rawValue) (it needs \(algorithm.keyDescription))"
        case .badSignature: "token signature is not valid"
        case .missingClaim(let name): "token has no \(name) claim"
        case .invalidClaim(let name, let expected): "token claim \(name) must be \(expected)"
        case .subjectMismatch: "token sub does not match userId"
        case .expired: "token has expired (exp)"
        case .notYetValid: "token is not valid yet (nbf)"
        }
    }

    public var description: String { message }

    /// The broker error a refusal becomes.
    var brokerError: BrokerError { BrokerError(.unauthorized, message) }

    /// At most 32 characters of untrusted text, so a hostile header cannot bloat the reply.
    static func clipped(_ text: String) -> String {
        text.count <= 32 ? text : String(text.prefix(32)) + "…"
    }

    /// Untrusted text clipped (``clipped(_:)``) and written as a JSON string, so quotes and
    /// control characters cannot forge a log line or a message.
    static func quoted(_ text: String) -> String {
        JSON.string(clipped(text)).compactString
    }
}
