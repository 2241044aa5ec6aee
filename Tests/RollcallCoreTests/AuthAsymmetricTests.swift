import Crypto
import RollcallProtocol
import RollcallTestSupport
import Testing
@testable import RollcallCore

/// RS256, ES256 and EdDSA tokens against JWK Sets (PROTOCOL §3, 1.2): `kid` selection, every
/// refusal the contract names (alg none, algorithm confusion, unknown kid, wrong curve,
/// alg/key-type mismatch, expired, bad signature), and HS256 beside them.
@Suite("Auth: RS256, ES256 and EdDSA with key sets")
struct AuthAsymmetricTests {
    typealias F = AuthFixture

    static let rsa = TestSigningKey.rsa()
    static let otherRSA = TestSigningKey.otherRSA()
    static let ec = TestSigningKey.p256()
    static let ed = TestSigningKey.ed25519()

    /// A verifier with `secrets` and a file key set of `jwks` (JSON text).
    private func verifier(secrets: [String] = [], jwks: String) throws -> JWTVerifier {
        var verifier = JWTVerifier(secrets: secrets, clockSkewSeconds: 0)
        verifier.useKeySet(try JWKSet.parse(Array(jwks.utf8)), from: .file)
        return verifier
    }

    private func verifier(secrets: [String] = [], _ keys: [TestSigningKey]) throws -> JWTVerifier {
        try verifier(secrets: secrets, jwks: TestSigningKey.jwks(keys))
    }

    /// A token of `key` for alice valid for an hour from the fixture's now.
    private func token(_ key: TestSigningKey, ttl: Int = 3600) -> String {
        key.token(sub: "alice", now: F.nowSeconds, ttl: ttl)
    }

    private func refusal(_ token: String, _ verifier: JWTVerifier) -> JWTRefusal? {
        if case .failure(let refusal) = verifier.verify(token, now: F.now) { return refusal }
        return nil
    }

    @Test("a token of each algorithm verifies with the key its kid names", arguments: [rsa, ec, ed])
    func eachAlgorithm(key: TestSigningKey) throws {
        let verifier = try verifier([Self.rsa, Self.ec, Self.ed])
        let claims = try verifier.verify(token(key), now: F.now).get()
        #expect(claims.subject == "alice")
        #expect(claims.expiresAt == Double(F.nowSeconds + 3600))
    }

    @Test("without kid, every key of the token's algorithm is tried")
    func withoutKid() throws {
        let verifier = try verifier([Self.rsa, Self.otherRSA, Self.ec])
        #expect(refusal(token(TestSigningKey.otherRSA(kid: nil)), verifier) == nil)
        #expect(refusal(token(TestSigningKey.p256(kid: nil)), verifier) == nil)
        #expect(refusal(token(TestSigningKey.rsa(kid: nil)), verifier) == nil)
        #expect(refusal(token(TestSigningKey.ed25519(kid: nil)), verifier) == .noKey(.edDSA))
        #expect(refusal(token(TestSigningKey.p256(kid: nil, seed: 2)), verifier) == .badSignature)
    }

    @Test("with a kid, only that key: a token signed by another key of the set under this kid is refused")
    func kidSelectsOnlyThatKey() throws {
        let verifier = try verifier([Self.rsa, Self.otherRSA])
        let forged = TestSigningKey.otherRSA(kid: "rsa-1")  // signs with rsa-2, claims rsa-1
        #expect(refusal(token(forged), verifier) == .badSignature)
    }

    @Test("alg none is refused, with or without kid, signature or not", arguments: [
        #"{"alg":"none","typ":"JWT"}"#, #"{"alg":"none","kid":"rsa-1"}"#, #"{"alg":"None"}"#, #"{"alg":"NONE","kid":"ec-1"}"#,
    ])
    func algNone(header: String) throws {
        let verifier = try verifier(secrets: [F.secret], [Self.rsa, Self.ec])
        let payload = #"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#
        let unsigned = TestSigningKey.base64URL(Array(header.utf8)) + "." + TestSigningKey.base64URL(Array(payload.utf8)) + "."
        let alg = try #require(JSONParser.parse(Array(header.utf8))["alg"]?.stringValue)
        #expect(refusal(unsigned, verifier) == .unsupportedAlgorithm(alg))
        #expect(refusal(Self.rsa.sign(header: header, payload: payload), verifier) == .unsupportedAlgorithm(alg))
    }

    @Test("algorithm confusion: HS256 keyed with the RSA public key's PEM or DER is refused")
    func algorithmConfusion() throws {
        let payload = #"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#
        let pem = Self.rsa.publicKeyPEM
        let forgeries = [
            TestSigningKey.hs256(header: #"{"alg":"HS256","typ":"JWT","kid":"rsa-1"}"#, payload: payload, key: Array(pem.utf8)),
            TestSigningKey.hs256(header: #"{"alg":"HS256","kid":"rsa-1"}"#, payload: payload, key: Array((pem + "\n").utf8)),
            TestSigningKey.hs256(header: #"{"alg":"HS256"}"#, payload: payload, key: Self.rsa.publicKeyDER),
        ]
        let withSecret = try verifier(secrets: [F.secret], [Self.rsa])
        let keysOnly = try verifier([Self.rsa])
        for forged in forgeries {
            #expect(refusal(forged, withSecret) == .badSignature)
            #expect(refusal(forged, keysOnly) == .noKey(.hs256))
        }
        #expect(JWTRefusal.noKey(.hs256).message == "no HS256 secret is configured (auth.secret, auth.secrets)")
    }

    @Test("an unknown kid is refused even when another key of the set would verify")
    func unknownKid() throws {
        let verifier = try verifier([Self.rsa, Self.otherRSA])
        let refused = refusal(token(TestSigningKey.rsa(kid: "rsa-0")), verifier)
        #expect(refused == .unknownKeyId("rsa-0"))
        #expect(refused?.code == "unknown_kid")
        #expect(refused?.message == #"token kid "rsa-0" is not in the key set"#)
        #expect(refusal(token(TestSigningKey.rsa(kid: "RSA-1")), verifier) == .unknownKeyId("RSA-1"))  // byte for byte
    }

    @Test("wrong curve: ES256 against a P-384 key, an Ed25519 key, or a JWK whose crv does not match its coordinates")
    func wrongCurve() throws {
        let p384 = Array(P384.Signing.PrivateKey().publicKey.x963Representation)
        let x = TestSigningKey.base64URL(p384[1...48]), y = TestSigningKey.base64URL(p384[49...96])
        let jwks = #"{"keys":[{"kty":"EC","crv":"P-384","x":"\#(x)","y":"\#(y)","kid":"p384"},"#
            + #"{"kty":"EC","crv":"P-256","x":"\#(x)","y":"\#(y)","kid":"mislabelled"},\#(Self.ed.jwk()),\#(Self.ec.jwk())]}"#
        let verifier = try verifier(jwks: jwks)
        let cases: [(String, String)] = [
            ("p384", #"key "p384" (EC P-384) is not usable: crv "P-384" is not accepted; ES256 needs P-256"#),
            ("mislabelled", #"key "mislabelled" (EC P-256) is not usable: x and y are 48 and 48 bytes; P-256 needs 32 each"#),
            ("ed-1", #"key "ed-1" (OKP Ed25519) cannot verify ES256, which needs an EC P-256 key"#),
        ]
        for (kid, reason) in cases {
            let refused = refusal(token(TestSigningKey.p256(kid: kid)), verifier)
            #expect(refused == .keyMismatch(reason), "\(kid)")
            #expect(refused?.code == "key_mismatch")
        }
        #expect(refusal(token(Self.ec), verifier) == nil)
    }

    @Test("alg/key-type mismatch: the kid names a key of another type, or one limited to another alg")
    func algorithmKeyMismatch() throws {
        let jwks = #"{"keys":[\#(Self.rsa.jwk()),\#(Self.ec.jwk(alg: "ES256")),\#(Self.ed.jwk())]}"#
        let verifier = try verifier(jwks: jwks)
        // A real RS256 signature by the RSA key, its header naming the EC key.
        #expect(refusal(TestSigningKey.rsa(kid: "ec-1").token(sub: "alice", now: F.nowSeconds), verifier)
                == .keyMismatch(#"key "ec-1" (EC P-256) is for ES256, not RS256"#))
        #expect(refusal(TestSigningKey.ed25519(kid: "rsa-1").token(sub: "alice", now: F.nowSeconds), verifier)
                == .keyMismatch(#"key "rsa-1" (RSA 2048-bit) cannot verify EdDSA, which needs an OKP Ed25519 key"#))
        #expect(refusal(TestSigningKey.p256(kid: "ed-1").token(sub: "alice", now: F.nowSeconds), verifier)
                == .keyMismatch(#"key "ed-1" (OKP Ed25519) cannot verify ES256, which needs an EC P-256 key"#))
        // The header's alg changed, the RSA signature kept: the EC key would have to verify it.
        let header = #"{"alg":"ES256","kid":"rsa-1"}"#
        #expect(refusal(Self.rsa.sign(header: header, payload: #"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#), verifier)
                == .keyMismatch(#"key "rsa-1" (RSA 2048-bit) cannot verify ES256, which needs an EC P-256 key"#))
    }

    @Test("expired and not-yet-valid tokens are refused after their signature verified", arguments: [rsa, ec, ed])
    func expired(key: TestSigningKey) throws {
        let verifier = try verifier([Self.rsa, Self.ec, Self.ed])
        #expect(refusal(key.token(sub: "alice", now: F.nowSeconds - 120, ttl: 60), verifier) == .expired)
        #expect(refusal(key.token(sub: "alice", now: F.nowSeconds, extra: #""nbf":\#(F.nowSeconds + 60)"#), verifier) == .notYetValid)
    }

    @Test("bad signatures: another key, a changed payload, a DER-encoded ECDSA signature, a truncated one", arguments: [rsa, ec, ed])
    func badSignature(key: TestSigningKey) throws {
        let verifier = try verifier([Self.rsa, Self.ec, Self.ed])
        let good = token(key)
        let parts = good.split(separator: ".").map(String.init)
        let otherPayload = TestSigningKey.base64URL(Array(#"{"sub":"mallory","exp":\#(F.nowSeconds + 3600)}"#.utf8))
        #expect(refusal(parts[0] + "." + otherPayload + "." + parts[2], verifier) == .badSignature)
        let signature = Array(try #require(Base64URL.decode(parts[2])))
        #expect(refusal(parts[0] + "." + parts[1] + "." + Base64URL.encode(signature.dropLast()), verifier) == .badSignature)
        #expect(refusal(parts[0] + "." + parts[1] + "." + Base64URL.encode(signature + [0]), verifier) == .badSignature)
        var flipped = signature
        flipped[flipped.count / 2] ^= 0x01
        #expect(refusal(parts[0] + "." + parts[1] + "." + Base64URL.encode(flipped), verifier) == .badSignature)
        if case .p256 = key.material {
            let der = Array(try P256.Signing.ECDSASignature(rawRepresentation: signature).derRepresentation)
            #expect(refusal(parts[0] + "." + parts[1] + "." + Base64URL.encode(der), verifier) == .badSignature)
        }
    }

    @Test("HS256 is verified with the secrets whatever its kid; the key sets never verify it")
    func hs256BesideKeySets() throws {
        let verifier = try verifier(secrets: [F.secret], [Self.rsa])
        let payload = #"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#
        for header in [#"{"alg":"HS256"}"#, #"{"alg":"HS256","kid":"rsa-1"}"#, #"{"alg":"HS256","kid":"unknown"}"#] {
            #expect(refusal(F.signed(header: header, payload), verifier) == nil, "\(header)")
        }
        #expect(refusal(token(Self.rsa), verifier) == nil)
    }

    @Test("a kid that is not a string is malformed")
    func kidNotAString() throws {
        let verifier = try verifier([Self.rsa])
        let token = Self.rsa.sign(header: #"{"alg":"RS256","kid":1}"#, payload: #"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#)
        #expect(refusal(token, verifier) == .malformed("header kid is not a string"))
    }

    @Test("no key set yet: RS256, ES256 and EdDSA find no key", arguments: [rsa, ec, ed])
    func noKeySet(key: TestSigningKey) throws {
        let verifier = JWTVerifier(secrets: [F.secret], clockSkewSeconds: 0)
        let algorithm = try #require(JWTAlgorithm(exactly: key.algorithm))
        #expect(refusal(token(TestSigningKey(kid: nil, key.material)), verifier) == .noKey(algorithm))
        #expect(refusal(token(key), verifier) == .unknownKeyId(key.kid ?? ""))
    }

    @Test("the file's and the URL's keys are both in force; a new set replaces only its source's keys")
    func twoSources() throws {
        var verifier = try verifier([Self.rsa])
        verifier.useKeySet(try JWKSet.parse(Array(TestSigningKey.jwks([Self.ec]).utf8)), from: .url)
        #expect(refusal(token(Self.rsa), verifier) == nil)
        #expect(refusal(token(Self.ec), verifier) == nil)
        verifier.useKeySet(try JWKSet.parse(Array(TestSigningKey.jwks([Self.ed]).utf8)), from: .url)
        #expect(refusal(token(Self.rsa), verifier) == nil)
        #expect(refusal(token(Self.ec), verifier) == .unknownKeyId("ec-1"))
        #expect(refusal(token(Self.ed), verifier) == nil)
    }

    @Test("every refusal has a distinct stable code, and allCodes lists them all")
    func codes() {
        let all: [JWTRefusal] = [.missingToken, .malformed("x"), .unsupportedAlgorithm(nil), .unsupportedType,
                                 .unsupportedCriticalHeader, .unknownKeyId("k"), .keyMismatch("k"), .noKey(.rs256), .badSignature,
                                 .missingClaim("sub"), .invalidClaim("exp", "x"), .subjectMismatch, .expired, .notYetValid]
        #expect(all.map(\.code) == JWTRefusal.allCodes)
        #expect(Set(JWTRefusal.allCodes).count == JWTRefusal.allCodes.count)
        #expect(Authenticators.refusalReasons == JWTRefusal.allCodes)
        #expect(JWTRefusal.unsupportedAlgorithm("none").message == #"token alg "none" is not accepted; HS256, RS256, ES256 and EdDSA are"#)
    }
}
