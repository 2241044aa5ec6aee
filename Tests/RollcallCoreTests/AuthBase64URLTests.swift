import Testing
@testable import RollcallCore

@Suite("Auth: strict base64url")
struct AuthBase64URLTests {
    /// RFC 4648 §10 test vectors (unpadded; base64url equals base64 for these).
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"),
        ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ]

    @Test("RFC 4648 vectors encode and decode")
    func rfcVectors() {
        for (plain, encoded) in Self.vectors {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test("the URL-safe alphabet: - and _ stand for 62 and 63")
    func urlSafeAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test("every byte string of length 0…70 round-trips")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(Base64URL.decode(encoded) == bytes)
        }
    }

    @Test("non-canonical or foreign spellings are refused", arguments: [
        "Zg==",      // padding
        "Zm8=",      // padding
        "Zm9v\n",    // whitespace
        "Zm 9v",     // whitespace
        "Zm+v",      // standard-alphabet +
        "Zm/v",      // standard-alphabet /
        "Zm9vY",     // length mod 4 == 1
        "Z",         // length mod 4 == 1
        "Zh",        // non-zero unused bits (canonical is Zg)
        "Zm9",       // non-zero unused bits (canonical is Zm8)
        "Zm9v\u{0}", // NUL
        "Zm9vé",     // non-ASCII
    ])
    func refused(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
