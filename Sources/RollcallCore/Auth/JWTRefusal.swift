/// Why a login token was refused. Every case becomes `UNAUTHORIZED` on the wire (then close
/// 4401) with ``message``; ``code`` is a stable name for logs and tests. No message ever
/// contains the secret, and none repeats the token.
package enum JWTRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// `auth.mode` is `jwt` and the login carried no `token`.
    case missingToken
    /// Not three base64url segments of a JSON object header and claims set; the reason says which part.
    case malformed(String)
    /// The header's `alg` is missing, not a string or not `HS256` (the value, if a string).
    case unsupportedAlgorithm(String?)
    /// The header's `typ` is present and not `JWT`.
    case unsupportedType
    /// The header lists `crit` extensions, none of which this verifier understands.
    case unsupportedCriticalHeader
    /// The HMAC-SHA256 signature does not match the secret.
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
        case .badSignature: "bad_signature"
        case .missingClaim: "missing_claim"
        case .invalidClaim: "invalid_claim"
        case .subjectMismatch: "subject_mismatch"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        }
    }

    /// Human text for the `UNAUTHORIZED` reply.
    public var message: String {
        switch self {
        case .missingToken: "a token is required to log in"
        case .malformed(let reason): "malformed token: \(reason)"
        case .unsupportedAlgorithm(let alg?): "token alg \"\(Self.clipped(alg))\" is not accepted; only HS256 is"
        case .unsupportedAlgorithm(nil): "token header has no string alg; only HS256 is accepted"
        case .unsupportedType: "token header typ must be \"JWT\""
        case .unsupportedCriticalHeader: "token header crit lists extensions this broker does not support"
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
    private static func clipped(_ text: String) -> String {
        text.count <= 32 ? text : String(text.prefix(32)) + "…"
    }
}
