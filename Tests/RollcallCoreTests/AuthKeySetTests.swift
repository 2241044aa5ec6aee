import Crypto
import RollcallProtocol
import RollcallTestSupport
import Testing
@testable import RollcallCore

/// JWK Sets (RFC 7517; PROTOCOL §3, 1.2): what a set must be, which keys are usable, and why
/// the others are not (kept in the set with their problem, so a token naming one is refused
/// as `key_mismatch` with the reason).
@Suite("Auth: JWK Set parsing")
struct AuthKeySetTests {
    /// The one key `jwk` (JSON text) becomes, alone in a set beside a usable RSA key.
    private func key(_ jwk: String) throws -> JSONWebKey {
        let set = try JWKSet.parse(Array(#"{"keys":[\#(jwk),\#(TestSigningKey.rsa(kid: "anchor").jwk())]}"#.utf8))
        return try #require(set.keys.first)
    }

    /// A P-384 public key's JWK members (a real point of that curve).
    private static var p384Members: String {
        let point = Array(P384.Signing.PrivateKey().publicKey.x963Representation)
        return #""kty":"EC","crv":"P-384","x":"\#(TestSigningKey.base64URL(point[1...48]))","y":"\#(TestSigningKey.base64URL(point[49...96]))""#
    }

    @Test("RSA, EC P-256 and OKP Ed25519 keys load with their kid; alg and use sig are allowed")
    func usableKeys() throws {
        let set = try JWKSet.parse(Array(#"{"keys":[\#(TestSigningKey.rsa().jwk(alg: "RS256", use: "sig")),\#(TestSigningKey.p256().jwk()),\#(TestSigningKey.ed25519().jwk(alg: "EdDSA"))]}"#.utf8))
        #expect(set.usableKids == ["rsa-1", "ec-1", "ed-1"])
        #expect(set.problems.isEmpty)
        #expect(set.keys.map(\.summary) == ["RSA 2048-bit", "EC P-256", "OKP Ed25519"])
        #expect(set.keys[0].fits(.rs256) && !set.keys[0].fits(.es256))
        #expect(set.keys[1].fits(.es256) && !set.keys[1].fits(.edDSA))
        #expect(set.keys[2].fits(.edDSA) && !set.keys[2].fits(.rs256))
    }

    @Test("a key that cannot verify stays in the set, unusable, with the reason", arguments: [
        ("an EC P-384 key", #"{\#(p384Members),"kid":"k"}"#, #"crv "P-384" is not accepted; ES256 needs P-256"#),
        ("P-384 coordinates under crv P-256", #"{\#(p384Members.replacingOccurrences(of: "P-384", with: "P-256")),"kid":"k"}"#,
         "x and y are 48 and 48 bytes; P-256 needs 32 each"),
        ("an X25519 key", #"{"kty":"OKP","crv":"X25519","x":"\#(TestSigningKey.base64URL([UInt8](repeating: 9, count: 32)))","kid":"k"}"#,
         #"crv "X25519" is not accepted; EdDSA needs Ed25519"#),
        ("an encryption key", TestSigningKey.rsa(kid: "k").jwk(use: "enc"), #"use is "enc", not "sig""#),
        ("alg RS512", TestSigningKey.rsa(kid: "k").jwk(alg: "RS512"), #"alg "RS512" is not accepted"#),
        ("alg none", TestSigningKey.rsa(kid: "k").jwk(alg: "none"), #"alg "none" is not accepted"#),
        ("alg HS256", TestSigningKey.rsa(kid: "k").jwk(alg: "HS256"), #"alg "HS256" is not accepted"#),
        ("alg ES256 on an RSA key", TestSigningKey.rsa(kid: "k").jwk(alg: "ES256"), "alg ES256 does not fit this key (RSA 2048-bit)"),
        ("key_ops without verify", #"{"kty":"OKP","crv":"Ed25519","x":"\#(TestSigningKey.base64URL(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation))","kid":"k","key_ops":["sign"]}"#,
         #"key_ops does not list "verify""#),
        ("a private key", TestSigningKey.p256(kid: "k").jwk().replacingOccurrences(of: "}", with: #","d":"AAAA"}"#), "private or secret key material (d)"),
        ("a symmetric key", #"{"kty":"oct","k":"c2VjcmV0","kid":"k"}"#, "private or secret key material (k)"),
        ("a symmetric key without k", #"{"kty":"oct","kid":"k"}"#, "a symmetric (oct) key"),
        ("an unknown kty", #"{"kty":"DSA","kid":"k"}"#, #"kty "DSA" is not supported"#),
        ("no kty", #"{"kid":"k","n":"AQAB"}"#, "kty must be a string"),
        ("a 1024-bit modulus", #"{"kty":"RSA","n":"\#(TestSigningKey.base64URL([0xC1] + [UInt8](repeating: 7, count: 126) + [0x01]))","e":"AQAB","kid":"k"}"#,
         "its modulus has 1024 bits; RS256 needs at least 2048"),
        ("a modulus with a leading zero octet", #"{"kty":"RSA","n":"\#(TestSigningKey.base64URL([0x00, 0xC1] + [UInt8](repeating: 7, count: 255)))","e":"AQAB","kid":"k"}"#,
         "n starts with a zero octet"),
        ("an even exponent", TestSigningKey.rsa(kid: "k").jwk().replacingOccurrences(of: #""e":"AQAB""#, with: #""e":"AQAC""#),
         "e must be an odd number"),
        ("padded base64url", TestSigningKey.p256(kid: "k").jwk().replacingOccurrences(of: #"","y""#, with: #"=","y""#),
         "x is not canonical unpadded base64url"),
        ("a point off the curve", #"{"kty":"EC","crv":"P-256","x":"\#(TestSigningKey.base64URL([UInt8](repeating: 1, count: 32)))","y":"\#(TestSigningKey.base64URL([UInt8](repeating: 2, count: 32)))","kid":"k"}"#,
         "(x, y) is not a point of P-256"),
        ("a short Ed25519 key", #"{"kty":"OKP","crv":"Ed25519","x":"\#(TestSigningKey.base64URL([UInt8](repeating: 1, count: 31)))","kid":"k"}"#,
         "x is 31 bytes; Ed25519 needs 32"),
        ("a member named twice", #"{"kty":"RSA","kty":"EC","kid":"k"}"#, "names the member kty twice"),
    ])
    func unusableKey(_ name: String, _ jwk: String, _ problem: String) throws {
        let parsed = try key(jwk)
        #expect(!parsed.isUsable, "\(name)")
        #expect(parsed.kid == "k", "\(name)")
        #expect(parsed.problem?.contains(problem) == true, "\(name): \(parsed.problem ?? "usable")")
        for algorithm in JWTAlgorithm.allCases { #expect(!parsed.fits(algorithm), "\(name)") }
    }

    @Test("a kid that is not a string makes the key unusable (and nameless)")
    func kidNotAString() throws {
        let parsed = try key(TestSigningKey.rsa(kid: nil).jwk().replacingOccurrences(of: "}", with: #","kid":7}"#))
        #expect(parsed.kid == nil)
        #expect(parsed.problem == "kid must be a string")
    }

    @Test("a document that is not a key set, or has no usable key, is refused", arguments: [
        ("", JWKSetError.Code.notJSON, "not JSON"),
        ("[]", .notAKeySet, "not a JSON object"),
        (#"{"kty":"RSA"}"#, .notAKeySet, #"no "keys" array"#),
        (#"{"keys":{}}"#, .notAKeySet, #"no "keys" array"#),
        (#"{"keys":[],"keys":[]}"#, .notAKeySet, "names the member \"keys\" twice"),
        (#"{"keys":[]}"#, .noUsableKey, #"no usable key: "keys" is empty"#),
        (#"{"keys":[{"kty":"EC","crv":"P-521","kid":"old"}]}"#, .noUsableKey, #"no usable key: key "old" (EC P-521): crv "P-521""#),
        (#"{"keys":[7]}"#, .noUsableKey, "a key must be a JSON object"),
    ])
    func refusedDocument(_ text: String, _ code: JWKSetError.Code, _ mentions: String) {
        do {
            _ = try JWKSet.parse(Array(text.utf8))
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == code, "\(text)")
            #expect(error.message.contains(mentions), "\(text): \(error.message)")
        }
    }

    @Test("members the broker does not use (x5c, x5t, custom ones) are ignored")
    func extraMembers() throws {
        let jwk = TestSigningKey.ed25519().jwk().replacingOccurrences(of: "}", with: #","x5t":"abc","custom":{"a":1}}"#)
        #expect(try JWKSet.parse(Array(#"{"keys":[\#(jwk)],"other":true}"#.utf8)).usableKids == ["ed-1"])
    }
}
