import Crypto
import _CryptoExtras

/// One public key of a JWK Set (RFC 7517) as the verifier uses it: its `kid`, the `alg` it is
/// limited to, and the swift-crypto key, or why it cannot verify any accepted algorithm
/// (a P-384 key, an encryption key, private material…). Unusable keys stay in the set so that
/// a token naming one by `kid` is refused as `key_mismatch` with the reason, not `unknown_kid`.
public struct JSONWebKey: Sendable {
    /// The key material swift-crypto verifies with. swift-crypto's P-256 and Ed25519 key types
    /// are not `Sendable`, so those keys are kept as the bytes they were checked from and
    /// made again for each check (a copy and, for P-256, a point check: microseconds).
    enum Material: Sendable {
        /// RSA, at least 2048 bits: RS256.
        case rsa(_RSA.Signing.PublicKey)
        /// EC on P-256, as its uncompressed point `04 || x || y` (checked to be on the curve): ES256.
        case p256(x963: [UInt8])
        /// OKP Ed25519, as its 32 bytes: EdDSA.
        case ed25519(raw: [UInt8])
    }

    /// `kid`, when the key has one (a string).
    public let kid: String?
    /// `alg`, when the key is limited to one algorithm.
    let algorithm: JWTAlgorithm?
    /// The verifying key; nil when the key is not usable (``problem`` says why).
    let material: Material?
    /// Why the key cannot be used; nil when it can.
    public let problem: String?
    /// What the key is, for messages: `RSA 2048-bit`, `EC P-256`, `OKP Ed25519`, `EC P-384`, `oct`.
    public let summary: String

    /// True when the key can verify something.
    public var isUsable: Bool { material != nil }

    /// The key as it is named in messages: `key "k1" (EC P-256)`, or `a key without kid (…)`.
    var label: String {
        guard let kid else { return "a key without kid (\(summary))" }
        return "key \(JWTRefusal.quoted(kid)) (\(summary))"
    }

    /// True when this key verifies tokens of `algorithm`: its material is of the algorithm's
    /// type and curve, and its own `alg`, if any, is that algorithm.
    func fits(_ algorithm: JWTAlgorithm) -> Bool {
        guard self.algorithm == nil || self.algorithm == algorithm, let material else { return false }
        switch (material, algorithm) {
        case (.rsa, .rs256), (.p256, .es256), (.ed25519, .edDSA): return true
        default: return false
        }
    }

    /// Why this key does not verify `algorithm` (only meaningful when ``fits(_:)`` is false).
    func mismatch(with algorithm: JWTAlgorithm) -> String {
        if let problem { return "\(label) is not usable: \(problem)" }
        if let own = self.algorithm, own != algorithm { return "\(label) is for \(own.rawValue), not \(algorithm.rawValue)" }
        return "\(label) cannot verify \(algorithm.rawValue), which needs \(algorithm.keyDescription)"
    }

    /// True when `signature` is this key's valid `algorithm` signature of `signingInput`.
    /// Call only when ``fits(_:)``. The signature's length is checked first: 64 bytes for ES256
    /// (`r || s`, never DER) and EdDSA, the modulus' length for RS256.
    func verifies(_ signature: [UInt8], of signingInput: [UInt8], with algorithm: JWTAlgorithm) -> Bool {
        switch (material, algorithm) {
        case (.rsa(let key)?, .rs256):
            guard signature.count == (key.keySizeInBits + 7) / 8 else { return false }
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature),
                                        for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        case (.p256(let point)?, .es256):
            guard signature.count == 64, let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
                  let key = try? P256.Signing.PublicKey(x963Representation: point) else { return false }
            return key.isValidSignature(parsed, for: SHA256.hash(data: signingInput))
        case (.ed25519(let raw)?, .edDSA):
            guard signature.count == 64, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
            return key.isValidSignature(signature, for: signingInput)
        default:
            return false
        }
    }

    init(kid: String?, algorithm: JWTAlgorithm?, material: Material?, problem: String?, summary: String) {
        self.kid = kid
        self.algorithm = algorithm
        self.material = material
        self.problem = problem
        self.summary = summary
    }
}
