import Crypto
import Foundation
import _CryptoExtras

/// A private key tests sign JSON Web Tokens with (PROTOCOL §3, 1.2: RS256, ES256, EdDSA), and
/// its public half as a JWK for a key set. RSA keys are fixed (generating one in a debug build
/// takes seconds); P-256 and Ed25519 keys are made from 32 seed bytes.
public struct TestSigningKey: @unchecked Sendable {
    /// The private key.
    public enum Material {
        case rsa(_RSA.Signing.PrivateKey)
        case p256(P256.Signing.PrivateKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    /// The `kid` of its JWK and of the tokens it signs (nil: none).
    public let kid: String?
    public let material: Material

    public init(kid: String?, _ material: Material) {
        self.kid = kid
        self.material = material
    }

    /// The first fixed 2048-bit RSA key.
    public static func rsa(kid: String? = "rsa-1") -> TestSigningKey {
        // Fixed test keys: their private halves are public, never use them elsewhere.
        TestSigningKey(kid: kid, .rsa(try! _RSA.Signing.PrivateKey(pemRepresentation: firstRSAPEM)))
    }

    /// The second fixed 2048-bit RSA key.
    public static func otherRSA(kid: String? = "rsa-2") -> TestSigningKey {
        TestSigningKey(kid: kid, .rsa(try! _RSA.Signing.PrivateKey(pemRepresentation: secondRSAPEM)))
    }

    /// A P-256 key made from `seed` (1 to 255).
    public static func p256(kid: String? = "ec-1", seed: UInt8 = 1) -> TestSigningKey {
        TestSigningKey(kid: kid, .p256(try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: seed, count: 32))))
    }

    /// An Ed25519 key made from `seed`.
    public static func ed25519(kid: String? = "ed-1", seed: UInt8 = 1) -> TestSigningKey {
        TestSigningKey(kid: kid, .ed25519(try! Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: seed, count: 32))))
    }

    /// The JWS algorithm it signs with: `RS256`, `ES256` or `EdDSA`.
    public var algorithm: String {
        switch material {
        case .rsa: "RS256"
        case .p256: "ES256"
        case .ed25519: "EdDSA"
        }
    }

    /// The public key as a JWK object (JSON text): `kty`, its members, `kid` when it has one,
    /// and `alg` and `use` when asked.
    public func jwk(alg: String? = nil, use: String? = nil) -> String {
        var members: [(String, String)] = []
        switch material {
        case .rsa(let key):
            let primitives = try! key.publicKey.getKeyPrimitives()
            members = [("kty", "RSA"), ("n", Self.base64URL(primitives.modulus)), ("e", Self.base64URL(primitives.publicExponent))]
        case .p256(let key):
            let point = Array(key.publicKey.x963Representation)
            members = [("kty", "EC"), ("crv", "P-256"), ("x", Self.base64URL(point[1...32])), ("y", Self.base64URL(point[33...64]))]
        case .ed25519(let key):
            members = [("kty", "OKP"), ("crv", "Ed25519"), ("x", Self.base64URL(key.publicKey.rawRepresentation))]
        }
        if let kid { members.append(("kid", kid)) }
        if let alg { members.append(("alg", alg)) }
        if let use { members.append(("use", use)) }
        return "{" + members.map { "\(Self.quoted($0.0)):\(Self.quoted($0.1))" }.joined(separator: ",") + "}"
    }

    /// The public key's SubjectPublicKeyInfo as PEM and as DER (RSA and P-256; an Ed25519 key
    /// gives its 32 raw bytes): what an algorithm-confusion attacker uses as an HMAC key.
    public var publicKeyPEM: String {
        switch material {
        case .rsa(let key): key.publicKey.pemRepresentation
        case .p256(let key): key.publicKey.pemRepresentation
        case .ed25519(let key): Self.base64URL(key.publicKey.rawRepresentation)
        }
    }

    /// See ``publicKeyPEM``.
    public var publicKeyDER: [UInt8] {
        switch material {
        case .rsa(let key): Array(key.publicKey.derRepresentation)
        case .p256(let key): Array(key.publicKey.derRepresentation)
        case .ed25519(let key): Array(key.publicKey.rawRepresentation)
        }
    }

    /// An HS256 compact JWS of the raw JSON texts `header` and `payload` with `key` as the
    /// HMAC key's bytes (any bytes: a PEM's text, a DER).
    public static func hs256(header: String, payload: String, key: [UInt8]) -> String {
        let input = base64URL(Array(header.utf8)) + "." + base64URL(Array(payload.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: key))
        return input + "." + base64URL(Array(mac))
    }

    /// A JWK Set (JSON text) of `keys`' public halves.
    public static func jwks(_ keys: [TestSigningKey]) -> String {
        "{\"keys\":[" + keys.map { $0.jwk() }.joined(separator: ",") + "]}"
    }

    /// A compact JWS of the raw JSON texts `header` and `payload`, signed with this key
    /// (whatever the header says).
    public func sign(header: String, payload: String) -> String {
        let input = Self.base64URL(Array(header.utf8)) + "." + Self.base64URL(Array(payload.utf8))
        return input + "." + Self.base64URL(signature(of: Array(input.utf8)))
    }

    /// A token for `sub`, valid from `now` (Unix seconds) for `ttl` seconds, with the header
    /// `{"alg": algorithm, "typ": "JWT", "kid": kid}` (no `kid` when it has none) and `extra`
    /// claims (raw JSON members).
    public func token(sub: String, now: Int, ttl: Int = 3600, extra: String = "") -> String {
        let kidMember = kid.map { ",\"kid\":\(Self.quoted($0))" } ?? ""
        let header = "{\"alg\":\"\(algorithm)\",\"typ\":\"JWT\"\(kidMember)}"
        let more = extra.isEmpty ? "" : "," + extra
        return sign(header: header, payload: "{\"sub\":\(Self.quoted(sub)),\"iat\":\(now),\"exp\":\(now + ttl)\(more)}")
    }

    /// A token for `sub` valid for `ttl` seconds from the wall clock's now.
    public func token(sub: String, ttl: Int = 3600, extra: String = "") -> String {
        token(sub: sub, now: Int(Date().timeIntervalSince1970), ttl: ttl, extra: extra)
    }

    /// The signature bytes of `input`: RSASSA-PKCS1-v1_5 SHA-256, ECDSA P-256 SHA-256 as
    /// `r || s`, or Ed25519.
    public func signature(of input: [UInt8]) -> [UInt8] {
        switch material {
        case .rsa(let key):
            return Array(try! key.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        case .p256(let key):
            return Array(try! key.signature(for: input).rawRepresentation)
        case .ed25519(let key):
            return Array(try! key.signature(for: input))
        }
    }

    /// Unpadded base64url.
    public static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    private static func quoted(_ text: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
        return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
    }

    private static let firstRSAPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQCyKT2dpDIwdWn8
        vxCwIwle5mPbqcs696HvO81xTYLA3z8exBqzo3YsSdahWfX3RE/B/cKIKdO8XDEQ
        MDd5eTdyUErsWe8k3t0t2aE6ugrENJ9bpAF4m1rPtvsVnourBAF9HUI/JUNbbW13
        8bjgqwvbGnbbLGy977i6l23aW41IsoPxtWRpvEmgF62Tj/z1EqvUYq+mdtcRyj5Y
        XNO0xH/7H/FYv93ug96bNCjunaLFG3NEH+dp7+WHh13kmvXHXABvhKO9DOGkTwyf
        EfOWxBgQf94g5n+QQ+NWopYrsN+V7nBioQWQgGG3AIIOgjrPyE/A37htC/jSWJwq
        IdQdDD0bAgMBAAECggEAF/GHm1u0IbkV5mbTL6jLG0WWnrCMuem1NKPyh0tQdZVL
        NAT3mwmD2eM5L3QZ+gI56dYDF9jvNihPBmBEhFRwdDIq75ANSK+URWjdzI5bi2Tl
        vyN6eHgAgLE/Ffe5yOD/8OLxbUUXw/4f280mTeNkSNefU53+e0RFV6ZUQtKnrouT
        KNChT7eQMpDE9JbJYok0bmmfLxLx50Qe6nBtzCd51k4UZcDPPSjF33G6UeeXburK
        Wu9Cl8s91a9/V/NHPiK0Z3E7tQKZ8ynKxM21EWccygIspXSLDVaPo2675F6RzONl
        DQXK0OzwT1wvZiaKVtrHBsTgvlifDnYqEe+zh/OLaQKBgQDdii8cYBLSPX8uaamo
        zvyqSYtxcBFgtuOybjm20fZHUmhQJqnnZB+1aProvaG58qXTTjHHWox6tUe9nBfl
        1Fcec4tPzgYqOFzFXu+6aC5Qr/EjdHrKvxbdvg4OKa6DuKxMqqaExfEQU6/dqF9m
        eOQa8V6epmdx6GcyscV83SpmZwKBgQDN37KN5r0MohhjuZuDv7MnqJBLxBFlRxsw
        UApwX9ttUpQ6C/cRCiTTebebD6EFb9pRyrsDObjrbc6+hJARgb4Iw1/Y+DE7HXAk
        27oxEckX55tkd0/5AicmuyDcNTWYtt3iZ+XQJgRZN5/uL832jD4l+x16X66IgpHW
        rSQJcP27LQKBgHt4vpUD/rlqSO3nOgW5hxypbKxGl4jdpb4WrNf14VsS1MyHH/60
        0O9cmSsKNY7bbAx+8kN3dgAV9Ov6iV8wn3V7VFOgMdNqIlpmdRnhYp7Z0H3AN4e0
        RNxFRrQiCv+i93SrT6+EWryMx+G0K6eDDS7vA5tMhy73Jj0c00KqSS1VAoGBALz0
        Xxacu9E3iXkmZxUSQqXYsa/Iokq5a7v5Csu/P09kpsVsK/TIwaoTojBAtQKfedru
        Xp0EQrRa0ZHNa8mVskyqvXMPwWfHiiFaRtc4wsAdBGO+mnkqv7JtuChE8g9bb+WY
        hLZ53i3gvvpHiBuM9pG3nIOwBCoo5SALQ/MicM91AoGBAIYhzP0vYqsB+wCBqXmz
        f9xJlQJwrCfkLjuW1e9xJKCXv60TEINXhjoiRC7NJEgBVP2R9p6iWTURW9ApXpyp
        MEiEYSWuOONZzbOui43fni04lehfTmbxYsqiHGwXJXxdMQz7gjEhs4B7ISwMT24f
        aVn57WMAXYr4dEppKyvkolXm
        -----END PRIVATE KEY-----
        """

    private static let secondRSAPEM = """
        -----BEGIN PRIVATE KEY-----
        MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDfTiKNq7S3tbn8
        t+SskZXEzrnOPuT6zJuG+Xg6ZypXj6XLcrpZLVbrgZvDAEJBX6b88+kfheTWDlAp
        UBE0IObmvblD/LMfvSqLz1KH8qUmprvdyZdWuXvxBwkPsyfc8YLecBvgSeMfGvv+
        I643naTtf1X035L/+i439/2z3LqGB+/JsHJP81+Et7V9IgpuJ0J4Yq0VCezUllhA
        k3ErFrqVANi5vwUCn7WL+Xn/8ZKpiIcHtYwUezY08bYSi4HpVMT4rBTJW0s1I13j
        FXLVk0c/O610ahEJTvg37vRC3rnjUE+ywjUbrYL660U1X2JsnYutHDBUicze3uM4
        T8KKiYWXAgMBAAECggEAAp9b9TFPYFpIV+PKUg3XphsOFZJUMBnXuGsU8rf5cv54
        jP4eRXksgdGLhGvBW3EweIdeH9pRCK6HBHqF6TMluGSsA1S5adBX6pJsaV+meYtl
        vhdlqUVpDjiYmPrv/JPy3IKRNpNyO7rzu1VXRhyaLkEw6jz3Rf2og0xsn1XNSaZS
        mBDHl8/ZzuvDnawfRgwnWfTx/ECn5qsvIq3JiNUF5grWn9Lp1Kj3ITr8zGy8WmsU
        9WpqXWyR1XTKlRprQFNavOg+x7vjKYXmLy4zPBGim7tJ18Vw93rTyL83pW6OhgBw
        9gyeHq7nE0DHTfMM7eCSB/rH9m+Ae6v7ZOQXvqmFqQKBgQD1omXUZeo4KFkDwjZW
        6uhOHDMBV5jIfxX2moO2KyaJGjY6t/JBbUkFxCimhA9H72AiRVieHtjxoQn9hWs5
        /utvFEVwXvMJIzHpjs3jx9nljNnOJF45BxgJfGIAxQNz0TVKPHr4IRHFF1iW9Pmz
        7Idcju32bQW6PJclaUjbctSFEwKBgQDouoObY5+7OiRrZ2lV4a0jVRpKxfzJpRQD
        5dZzSEMaZZeBg8hxrloxi3aRYPyH/MHS6O6vtCGSgthMC0vYk2X8/3V981UATFn9
        5J2tkHvYUS7nDcMWyaDWQs/lo3wpZClWAzlSuGlD4S62Nr6Hf3ob3X6gYzQphr2T
        KnGuaI3B7QKBgEJY+TRjyt4cV97iCJd1oAXpLAXCyWvul9oiZk1AXopN4DQAF5mA
        kWbTUz+XECGYENlw7bzYDDVIEFDARvRFXQaF7TOrEe536TVy8z4Bb2PHpdU+kYzJ
        075MMJSQopwX+FLy/ywikpAv/CfaR9BHpVBk8vXLAO8LCrB6Pcm4vJqtAoGBAK4E
        qNvMBmgM9aaJ0K2y7a95twsqN/bfRLQVa+EPq31VcZAaZgr6/94EFkhmaO2WBagb
        HD6tRl0zEWDrIW9z59LhgY0IIgrzDGdYRr69Rp1dNuD13WZwpZ8Qnjtrny+kAXSb
        PIWp9qwW+MKu9JCEtV2YpVJwW1Sht6cPGan76+ORAoGALtvFPtRvamV/qLJhKa0+
        INRYgEeNRPDYtsx9lrf5ahJpeQOYFNT4MnhexRHTXnUrS68SghzLk5YIBDZT1UNU
        b1xRloqn0mPw87pBFSZ9Jq1fghHi4/z/34waG6qv2Nz2Y2A6YZjsrwoMIlTAgXZm
        XwhdrmVYDVoRaaMXmPnloyU=
        -----END PRIVATE KEY-----
        """
}
