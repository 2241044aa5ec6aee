/// The JWS `alg` values the broker accepts (PROTOCOL §3): HS256 with the configured secrets,
/// RS256, ES256 and EdDSA (Ed25519) with the public keys of a JWK Set. Anything else, `none`
/// included, is refused before a key is looked at.
public enum JWTAlgorithm: String, Sendable, CaseIterable {
    /// HMAC with SHA-256 (RFC 7518 §3.2), keyed with `auth.secret` and `auth.secrets`.
    case hs256 = "HS256"
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3), an RSA key of at least 2048 bits.
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256 (RFC 7518 §3.4), the signature as the 64 bytes `r || s`.
    case es256 = "ES256"
    /// EdDSA (RFC 8037) with an Ed25519 key; the signature is 64 bytes.
    case edDSA = "EdDSA"

    /// The algorithm named exactly (case-sensitive, RFC 7515 §4.1.1) by `name`, if accepted.
    init?(exactly name: String) {
        guard let algorithm = Self.allCases.first(where: { $0.rawValue.utf8.elementsEqual(name.utf8) }) else { return nil }
        self = algorithm
    }

    /// True for the algorithms whose keys come from a JWK Set.
    var isAsymmetric: Bool { self != .hs256 }

    /// The key an algorithm needs, in words (for refusal messages).
    var keyDescription: String {
        switch self {
        case .hs256: "an HS256 secret (auth.secret, auth.secrets)"
        case .rs256: "an RSA key"
        case .es256: "an EC P-256 key"
        case .edDSA: "an OKP Ed25519 key"
        }
    }

    /// The accepted names, for messages: `HS256, RS256, ES256 and EdDSA`.
    static var acceptedNames: String {
        let names = allCases.map(\.rawValue)
        return names.dropLast().joined(separator: ", ") + " and " + names.last!
    }
}
