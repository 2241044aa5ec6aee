import Crypto

/// Which keys check a token's signature (PROTOCOL §3, 1.2):
/// - HS256: every secret (`auth.secret` or its variable, then `auth.secrets`), whatever the
///   header's `kid`; all are tried, in constant time each, so timing does not say which signed.
///   Never a key of a JWK Set: an HS256 token "signed" with an RSA public key's PEM or DER as
///   its HMAC key (algorithm confusion) finds no such secret and is refused.
/// - RS256, ES256, EdDSA: with a `kid`, the keys of the sets with exactly that `kid`, and only
///   those (none: `unknown_kid`; none that fits the `alg`: `key_mismatch`); without one, every
///   key that fits the `alg` (none: `no_key`). A key fits when its type and curve are the
///   algorithm's (RSA, EC P-256, OKP Ed25519) and its own `alg`, if any, is the token's.
extension JWTVerifier {
    /// nil when `signature` verifies `signingInput` under the rules above, else why not.
    func checkSignature(_ signature: [UInt8], of signingInput: [UInt8], header: Header) -> JWTRefusal? {
        let algorithm = header.algorithm
        guard algorithm.isAsymmetric else {
            guard !keyRing.secrets.isEmpty else { return .noKey(.hs256) }
            let signedByOne = keyRing.secrets.reduce(false) { found, secret in
                HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signingInput, using: SymmetricKey(data: secret)) || found
            }
            return signedByOne ? nil : .badSignature
        }
        let candidates: [JSONWebKey]
        if let kid = header.kid {
            let named = keyRing.keys(named: kid)
            guard let first = named.first else { return .unknownKeyId(kid) }
            candidates = named.filter { $0.fits(algorithm) }
            guard !candidates.isEmpty else { return .keyMismatch(first.mismatch(with: algorithm)) }
        } else {
            candidates = keyRing.keys(fitting: algorithm)
            guard !candidates.isEmpty else { return .noKey(algorithm) }
        }
        return candidates.contains { $0.verifies(signature, of: signingInput, with: algorithm) } ? nil : .badSignature
    }
}
