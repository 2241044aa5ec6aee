import RollcallProtocol

/// A JSON Web Key Set (RFC 7517 §5) from `auth.jwksFile` or `auth.jwksUrl`: the public keys
/// RS256, ES256 and EdDSA tokens are verified with (PROTOCOL §3, 1.2). Pure: the transport
/// reads the bytes and hands the parsed set to the broker (``InboundEvent/keySet(_:_:)``).
public struct JWKSet: Sendable {
    /// Every member of `keys`, in order, the unusable ones included (see ``JSONWebKey/problem``).
    public let keys: [JSONWebKey]

    /// The keys that can verify something.
    public var usableKeys: [JSONWebKey] { keys.filter(\.isUsable) }

    /// One line per unusable key, `key "k1" (EC P-384): crv "P-384" is not accepted; …`, for the log.
    public var problems: [String] {
        keys.compactMap { key in key.problem.map { "\(key.label): \($0)" } }
    }

    /// The `kid`s of the usable keys (`-` for a key without one), for the log.
    public var usableKids: [String] { usableKeys.map { $0.kid ?? "-" } }

    /// A set of already parsed keys.
    init(keys: [JSONWebKey]) { self.keys = keys }

    /// The set `bytes` spell: a JSON object whose `keys` is an array of JWKs. Throws when the
    /// document is not such an object, or when it has no usable key (an empty set would refuse
    /// every RS256, ES256 and EdDSA login); a key that cannot be used is kept with its
    /// problem, and the others load.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JWKSetError) -> JWKSet {
        let document: JSON
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw JWKSetError(.notJSON, "not JSON: \(error)")
        }
        guard let object = document.objectValue else { throw JWKSetError(.notAKeySet, "not a JSON object") }
        if let repeated = object.repeatedMemberName {
            throw JWKSetError(.notAKeySet, "it names the member \(JWTRefusal.quoted(repeated)) twice")
        }
        guard let members = object["keys"]?.arrayValue else {
            throw JWKSetError(.notAKeySet, "it has no \"keys\" array")
        }
        let set = JWKSet(keys: members.map(JSONWebKey.parse))
        guard !set.usableKeys.isEmpty else {
            let detail = set.problems.isEmpty ? "\"keys\" is empty" : set.problems.joined(separator: "; ")
            throw JWKSetError(.noUsableKey, "no usable key: \(detail)")
        }
        return set
    }
}

/// Why a JWK Set document was refused. ``CodedError/code`` is stable; the description is the
/// message alone.
public typealias JWKSetError = CodedError<JWKSetErrorCode>

/// The stable reasons a JWK Set is refused.
public enum JWKSetErrorCode: String, StableErrorCode {
    /// The bytes are not JSON.
    case notJSON = "not_json"
    /// JSON, but not an object with a `keys` array (or a member named twice).
    case notAKeySet = "not_a_key_set"
    /// A key set with no key that verifies RS256, ES256 or EdDSA.
    case noUsableKey = "no_usable_key"

    /// The message says what is wrong.
    public static var descriptionStartsWithCode: Bool { false }
}

/// Where a JWK Set comes from (PROTOCOL §3, 1.2). The broker keeps one set per source and
/// accepts keys from both.
public enum JWKSetSource: String, Sendable, CaseIterable {
    /// `auth.jwksFile`, read at start and again within 5 s of a change.
    case file
    /// `auth.jwksUrl`, fetched at start and every `auth.jwksRefreshSeconds`.
    case url

    /// The configuration key that names the source.
    public var configurationKey: String {
        switch self {
        case .file: "auth.jwksFile"
        case .url: "auth.jwksUrl"
        }
    }
}
