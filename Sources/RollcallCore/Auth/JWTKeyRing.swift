/// Every key a ``JWTVerifier`` checks signatures with: the HS256 secrets (`auth.secret` or
/// its variable, then `auth.secrets`) and one JWK Set per source (`auth.jwksFile`,
/// `auth.jwksUrl`). A new set from a source replaces that source's keys at once; the other
/// source's keys and the secrets stay.
struct JWTKeyRing: Sendable {
    /// Each secret's bytes (a `SymmetricKey` is made per check: the type is not `Sendable`).
    let secrets: [[UInt8]]
    /// The latest set of each source.
    private(set) var sets: [JWKSetSource: JWKSet] = [:]

    init(secrets: [String]) {
        self.secrets = secrets.map { Array($0.utf8) }
    }

    /// Every key of every source (file first), unusable ones included.
    var keys: [JSONWebKey] { JWKSetSource.allCases.flatMap { sets[$0]?.keys ?? [] } }

    /// Replaces the keys of `source` with `set`.
    mutating func use(_ set: JWKSet, from source: JWKSetSource) {
        sets[source] = set
    }

    /// The keys whose `kid` is exactly `kid` (byte for byte).
    func keys(named kid: String) -> [JSONWebKey] {
        keys.filter { $0.kid.map { $0.utf8.elementsEqual(kid.utf8) } ?? false }
    }

    /// The keys that verify `algorithm`.
    func keys(fitting algorithm: JWTAlgorithm) -> [JSONWebKey] {
        keys.filter { $0.fits(algorithm) }
    }
}
