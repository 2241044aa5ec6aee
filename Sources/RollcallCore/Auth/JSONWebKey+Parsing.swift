import Crypto
import RollcallProtocol
import _CryptoExtras

extension JSONWebKey {
    /// The members that hold private or symmetric key material (RFC 7518 §6.2.2, §6.3.2, §6.4;
    /// RFC 8037 §2): a key set published for verifiers never carries them.
    static let secretMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// The smallest RSA modulus accepted, in bits (RFC 7518 §3.3 requires 2048).
    static let minimumRSABits = 2048
    /// The largest RSA modulus accepted, in bits (what BoringSSL verifies).
    static let maximumRSABits = 16384

    /// Reads one member of a JWK Set's `keys` array. Never throws: a key that cannot be used
    /// comes back with ``problem`` set (and no material), so the rest of the set still loads.
    ///
    /// Strict: members are read as RFC 7517/7518/8037 define them, every base64url value
    /// must be canonical unpadded base64url, sizes are exact (P-256 coordinates 32 bytes, an
    /// Ed25519 key 32 bytes, no leading zero octet in `n`), points must be on their curve,
    /// and `use`, `key_ops` and `alg` must allow signature verification with an accepted
    /// algorithm.
    static func parse(_ value: JSON) -> JSONWebKey {
        guard let object = value.objectValue else {
            return unusable(kid: nil, summary: "not an object", "a key must be a JSON object")
        }
        let kid = object["kid"]?.stringValue
        let kty = object["kty"]?.stringValue
        let summary = Self.summary(kty: kty, object)
        func refuse(_ problem: String) -> JSONWebKey { unusable(kid: kid, summary: summary, problem) }

        if let repeated = object.repeatedMemberName { return refuse("it names the member \(repeated) twice") }
        if let kidValue = object["kid"], kidValue.stringValue == nil { return refuse("kid must be a string") }
        guard let kty else { return refuse("kty must be a string (RSA, EC or OKP)") }
        if let secret = secretMembers.first(where: { object[$0] != nil }) {
            return refuse("it holds private or secret key material (\(secret)); a key set holds public keys only")
        }
        if let use = object["use"] {
            guard let text = use.stringValue else { return refuse("use must be a string") }
            guard text == "sig" else { return refuse("use is \(JWTRefusal.quoted(text)), not \"sig\"") }
        }
        if let operations = object["key_ops"] {
            guard let list = operations.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                return refuse("key_ops must be an array of strings")
            }
            guard list.contains(where: { $0.stringValue == "verify" }) else { return refuse("key_ops does not list \"verify\"") }
        }
        var algorithm: JWTAlgorithm?
        if let alg = object["alg"] {
            guard let name = alg.stringValue else { return refuse("alg must be a string") }
            guard let accepted = JWTAlgorithm(exactly: name), accepted.isAsymmetric else {
                return refuse("alg \(JWTRefusal.quoted(name)) is not accepted (RS256, ES256 or EdDSA)")
            }
            algorithm = accepted
        }
        let material: Result<Material, KeyProblem>
        switch kty {
        case "RSA": material = rsa(object)
        case "EC": material = ellipticCurve(object)
        case "OKP": material = octetKeyPair(object)
        case "oct": return refuse("a symmetric (oct) key; HS256 secrets belong in auth.secret or auth.secrets")
        default: return refuse("kty \(JWTRefusal.quoted(kty)) is not supported (RSA, EC or OKP)")
        }
        switch material {
        case .failure(let problem):
            return refuse(problem.text)
        case .success(let material):
            let key = JSONWebKey(kid: kid, algorithm: algorithm, material: material, problem: nil, summary: summary)
            if let algorithm, !key.fits(algorithm) {
                return refuse("alg \(algorithm.rawValue) does not fit this key (\(summary))")
            }
            return key
        }
    }

    /// Why a key's material cannot be read.
    struct KeyProblem: Error {
        let text: String
        init(_ text: String) { self.text = text }
    }

    private static func unusable(kid: String?, summary: String, _ problem: String) -> JSONWebKey {
        JSONWebKey(kid: kid, algorithm: nil, material: nil, problem: problem, summary: summary)
    }

    /// `RSA`, `EC P-256`, `OKP Ed25519`, `oct`… (the RSA size is added once the modulus is read).
    private static func summary(kty: String?, _ object: JSONObject) -> String {
        guard let kty else { return "no kty" }
        let clipped = JWTRefusal.clipped(kty)
        switch kty {
        case "EC", "OKP":
            guard let curve = object["crv"]?.stringValue else { return "\(clipped) without crv" }
            return "\(clipped) \(JWTRefusal.clipped(curve))"
        case "RSA":
            guard let modulus = object["n"]?.stringValue.flatMap(Base64URL.decode), let first = modulus.first, first != 0 else { return "RSA" }
            return "RSA \(modulus.count * 8 - first.leadingZeroBitCount)-bit"
        default:
            return clipped
        }
    }

    /// The bytes of the base64url member `name` (required).
    private static func bytes(_ object: JSONObject, _ name: String) -> Result<[UInt8], KeyProblem> {
        guard let value = object[name] else { return .failure(KeyProblem("it has no \(name)")) }
        guard let text = value.stringValue, let bytes = Base64URL.decode(text) else {
            return .failure(KeyProblem("\(name) is not canonical unpadded base64url"))
        }
        return .success(bytes)
    }

    private static func rsa(_ object: JSONObject) -> Result<Material, KeyProblem> {
        bytes(object, "n").flatMap { modulus in bytes(object, "e").flatMap { exponent in
            guard let first = modulus.first, first != 0 else { return .failure(KeyProblem("n starts with a zero octet")) }
            guard let high = exponent.first, high != 0 else { return .failure(KeyProblem("e starts with a zero octet")) }
            let bits = modulus.count * 8 - first.leadingZeroBitCount
            guard bits >= minimumRSABits else {
                return .failure(KeyProblem("its modulus has \(bits) bits; RS256 needs at least \(minimumRSABits)"))
            }
            guard bits <= maximumRSABits else { return .failure(KeyProblem("its modulus has \(bits) bits; at most \(maximumRSABits)")) }
            guard exponent.count <= 4, exponent.last! & 1 == 1, exponent.count > 1 || high >= 3 else {
                return .failure(KeyProblem("e must be an odd number from 3 to 2^32 - 1"))
            }
            guard let key = try? _RSA.Signing.PublicKey(n: modulus, e: exponent) else {
                return .failure(KeyProblem("swift-crypto refused its n and e"))
            }
            return .success(.rsa(key))
        } }
    }

    private static func ellipticCurve(_ object: JSONObject) -> Result<Material, KeyProblem> {
        guard let curve = object["crv"]?.stringValue else { return .failure(KeyProblem("crv must be a string")) }
        guard curve == "P-256" else {
            return .failure(KeyProblem("crv \(JWTRefusal.quoted(curve)) is not accepted; ES256 needs P-256"))
        }
        return bytes(object, "x").flatMap { x in bytes(object, "y").flatMap { y in
            guard x.count == 32, y.count == 32 else {
                return .failure(KeyProblem("x and y are \(x.count) and \(y.count) bytes; P-256 needs 32 each"))
            }
            let point = [0x04] + x + y
            guard (try? P256.Signing.PublicKey(x963Representation: point)) != nil else {
                return .failure(KeyProblem("(x, y) is not a point of P-256"))
            }
            return .success(.p256(x963: point))
        } }
    }

    private static func octetKeyPair(_ object: JSONObject) -> Result<Material, KeyProblem> {
        guard let curve = object["crv"]?.stringValue else { return .failure(KeyProblem("crv must be a string")) }
        guard curve == "Ed25519" else {
            return .failure(KeyProblem("crv \(JWTRefusal.quoted(curve)) is not accepted; EdDSA needs Ed25519"))
        }
        guard object["y"] == nil else { return .failure(KeyProblem("an OKP key has no y")) }
        return bytes(object, "x").flatMap { x in
            guard x.count == 32 else { return .failure(KeyProblem("x is \(x.count) bytes; Ed25519 needs 32")) }
            guard (try? Curve25519.Signing.PublicKey(rawRepresentation: x)) != nil else {
                return .failure(KeyProblem("swift-crypto refused x"))
            }
            return .success(.ed25519(raw: x))
        }
    }
}
