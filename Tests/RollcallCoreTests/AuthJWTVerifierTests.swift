import RollcallProtocol
import Testing
@testable import RollcallCore

/// One token the authenticator must refuse, and why.
struct RefusedToken: Sendable, CustomTestStringConvertible {
    let name: String
    let token: String?
    var userId = "alice"
    let expected: JWTRefusal
    var testDescription: String { name }
}

@Suite("Auth: HS256 JWT verification")
struct AuthJWTVerifierTests {
    typealias F = AuthFixture

    // MARK: Known vectors (signatures computed independently with Python's hmac/hashlib)

    @Test("the jwt.io sample verifies (signature SflKxw…), then is refused for lacking exp")
    func jwtIoSample() {
        let token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        let verifier = JWTVerifier(secret: "your-256-bit-secret", clockSkewSeconds: 30)
        // Past the signature check: the claims set is what is missing.
        #expect(verifier.verify(token, now: F.now) == .failure(.missingClaim("exp")))
        // The same token with any other secret fails on the signature.
        let other = JWTVerifier(secret: "your-256-bit-secreT", clockSkewSeconds: 30)
        #expect(other.verify(token, now: F.now) == .failure(.badSignature))
    }

    @Test("an RFC 7515 A.1-style token (typ before alg, CRLF whitespace, extra claims) verifies")
    func rfcStyleVector() {
        // header {"typ":"JWT",\r\n "alg":"HS256"}; payload {"sub":"joe",\r\n "exp":1300819380,\r\n "http://example.com/is_root":true}
        let token = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.398NBr6AePluwbeNZlVifsVTKGM-KPpd-t0MiNRqJGM"
        let verifier = JWTVerifier(secret: F.secret, clockSkewSeconds: 0)
        let before: Timestamp = 1_300_819_379_999
        #expect(verifier.verify(token, now: before) == .success(JWTClaims(subject: "joe", expiresAt: 1_300_819_380)))
        #expect(verifier.verify(token, now: before + 1) == .failure(.expired))
    }

    @Test("a token with a channels claim verifies into its grant")
    func channelsVector() {
        // payload {"sub":"alice","exp":2000000000,"channels":["room:*"]}
        let token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MjAwMDAwMDAwMCwiY2hhbm5lbHMiOlsicm9vbToqIl19.2-2NQdFYCtWdYwOkNx9nF47dprlIeifgp7QHWpqeOBk"
        #expect(F.check(token) == .success(Grant(channelPatterns: ["room:*"])))
    }

    @Test("users and info claims verify into the grant; info is kept as its compact encoding, up to maxInfoBytes exactly")
    func usersAndInfo() {
        let token = F.token(extra: #""users":["team:*","bob"],"info":{ "name" : "Alice", "role":"admin" }"#)
        #expect(F.check(token) == .success(Grant(channelPatterns: nil, userPatterns: ["team:*", "bob"],
                                                 info: Array(#"{"name":"Alice","role":"admin"}"#.utf8))))
        // {"n":"…"} is 8 bytes plus the value: exactly 1024 passes, 1025 does not.
        let fits = F.token(extra: #""info":{"n":"\#(String(repeating: "y", count: 1016))"}"#)
        #expect(F.check(fits).map { $0.info?.count } == .success(1024))
        let over = F.token(extra: #""info":{"n":"\#(String(repeating: "y", count: 1017))"}"#)
        #expect(F.refusal(over) == .invalidClaim("info", "at most 1024 bytes encoded (auth.maxInfoBytes), not 1025"))
        let small = JWTAuthenticator(secret: F.secret, maxInfoBytes: 15)  // {"name":"Alice"} is 16
        #expect(F.check(F.token(extra: #""info":{"name":"Alice"}"#), authenticator: small).isFailure)
    }

    @Test("the grant's expiresAt is exp in milliseconds, fractions kept")
    func expiresAtInMilliseconds() {
        #expect(F.expiry(F.token(ttl: 60)) == Timestamp(F.nowSeconds + 60) * 1000)
        #expect(F.expiry(F.signed(#"{"sub":"alice","exp":\#(F.nowSeconds + 60).25}"#)) == Timestamp(F.nowSeconds + 60) * 1000 + 250)
    }

    @Test("the minter's output is byte-exact with an independently computed token")
    func mintedVector() {
        let token = JWTMinter.mint(secret: F.secret, userId: "alice", channels: ["room:*"], ttlSeconds: 3600, now: 1_700_000_000_999)
        #expect(token == "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImlhdCI6MTcwMDAwMDAwMCwiZXhwIjoxNzAwMDAzNjAwLCJjaGFubmVscyI6WyJyb29tOioiXX0.skRF3iWoVSPJMRR-strDsXQIXhwgexVP5ZkiuG9Nb5E")
    }

    // MARK: Accepted

    @Test("a valid token without channels grants every channel")
    func validToken() {
        #expect(F.check(F.token()) == .success(.unlimited))
    }

    @Test("optional nbf and iat in the past are accepted; unknown claims are ignored")
    func optionalClaims() {
        let token = F.token(extra: #""nbf":\#(F.nowSeconds - 10),"iat":\#(F.nowSeconds - 10),"name":"Alice","admin":true"#)
        #expect(F.check(token) == .success(.unlimited))
    }

    @Test("fractional NumericDates are honoured to the millisecond")
    func fractionalTimes() {
        let exp = Double(F.now) / 1000 + 0.5  // 500 ms after now
        let token = F.signed(#"{"sub":"alice","exp":\#(JSONNumber(exp).literal)}"#)
        let strict = JWTAuthenticator(secret: F.secret, clockSkewSeconds: 0)
        #expect(F.check(token, at: F.now + 499, authenticator: strict) == .success(.unlimited))
        #expect(F.check(token, at: F.now + 500, authenticator: strict) == .failure(.expired))
    }

    @Test("an empty channels array grants no channel at all")
    func emptyChannels() {
        #expect(F.check(F.token(extra: #""channels":[]"#)) == .success(Grant(channelPatterns: [])))
    }

    @Test("minted tokens round-trip through the verifier")
    func mintedRoundTrip() throws {
        let token = JWTMinter.mint(secret: F.secret, userId: "bob", channels: ["room:*", "lobby?"], ttlSeconds: 60, now: F.now)
        let claims = try JWTVerifier(secret: F.secret, clockSkewSeconds: 0).verify(token, now: F.now).get()
        #expect(claims.subject == "bob")
        #expect(claims.channels == ["room:*", "lobby?"])
        #expect(claims.issuedAt == Double(F.nowSeconds))
        #expect(claims.expiresAt == Double(F.nowSeconds + 60))
        #expect(F.check(token, userId: "bob") == .success(Grant(channelPatterns: ["room:*", "lobby?"])))
        let unlimited = JWTMinter.mint(secret: F.secret, userId: "bob", ttlSeconds: 60, now: F.now)
        #expect(F.check(unlimited, userId: "bob") == .success(.unlimited))
    }

    // MARK: Time

    @Test("exp: refused once past, with 30 s of skew allowed")
    func expiry() {
        let expiredLongAgo = F.token(ttl: -31)
        let expiredWithinSkew = F.token(ttl: -29)
        let expiredAtSkewEdge = F.token(ttl: -30)
        #expect(F.refusal(expiredLongAgo) == .expired)
        #expect(F.check(expiredWithinSkew) == .success(.unlimited))
        // exp + skew == now: no longer valid (exp is exclusive).
        let atEdge = Timestamp(F.nowSeconds) * 1000
        #expect(F.refusal(expiredAtSkewEdge, at: atEdge) == .expired)
        #expect(F.check(expiredAtSkewEdge, at: atEdge - 1) == .success(.unlimited))
    }

    @Test("nbf: refused while in the future beyond the skew")
    func notBefore() {
        let early = F.token(extra: #""nbf":\#(F.nowSeconds + 31)"#)
        let slightlyEarly = F.token(extra: #""nbf":\#(F.nowSeconds + 29)"#)
        #expect(F.refusal(early) == .notYetValid)
        #expect(F.check(slightlyEarly) == .success(.unlimited))
        #expect(F.check(early, at: F.now + 2_000) == .success(.unlimited))
    }

    @Test("a zero skew is exact")
    func zeroSkew() {
        let strict = JWTAuthenticator(secret: F.secret, clockSkewSeconds: 0)
        let token = F.signed(#"{"sub":"alice","exp":1000,"nbf":999}"#)
        #expect(F.check(token, at: 998_999, authenticator: strict) == .failure(.notYetValid))
        #expect(F.check(token, at: 999_000, authenticator: strict) == .success(.unlimited))
        #expect(F.check(token, at: 999_999, authenticator: strict) == .success(.unlimited))
        #expect(F.check(token, at: 1_000_000, authenticator: strict) == .failure(.expired))
    }

    @Test("an unusable skew is clamped instead of trapping")
    func skewIsClamped() {
        #expect(JWTVerifier(secret: F.secret, clockSkewSeconds: .nan).clockSkewMs == 0)
        #expect(JWTVerifier(secret: F.secret, clockSkewSeconds: -5).clockSkewMs == 0)
        #expect(JWTVerifier(secret: F.secret, clockSkewSeconds: .infinity).clockSkewMs == 0)
        #expect(JWTVerifier(secret: F.secret, clockSkewSeconds: 1e300).clockSkewMs == 86_400_000)
        #expect(JWTVerifier(secret: F.secret, clockSkewSeconds: 0.25).clockSkewMs == 250)
    }

    // MARK: Refused

    static let refusedTokens: [RefusedToken] = {
        let valid = F.token()
        let parts = valid.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let hs256 = #"{"alg":"HS256","typ":"JWT"}"#
        let claims = #"{"sub":"alice","exp":\#(F.nowSeconds + 3600)}"#
        var flipped = Array(parts[2].utf8)
        flipped[0] = flipped[0] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return [
            // Presence and shape
            RefusedToken(name: "no token", token: nil, expected: .missingToken),
            RefusedToken(name: "empty token", token: "", expected: .malformed("expected 3 dot-separated parts, found 1")),
            RefusedToken(name: "2 parts", token: parts[0] + "." + parts[1], expected: .malformed("expected 3 dot-separated parts, found 2")),
            RefusedToken(name: "4 parts", token: valid + ".", expected: .malformed("expected 3 dot-separated parts, found 4")),
            RefusedToken(name: "header not base64url", token: "ey!J." + parts[1] + "." + parts[2], expected: .malformed("header is not base64url")),
            RefusedToken(name: "header padded", token: parts[0] + "=." + parts[1] + "." + parts[2], expected: .malformed("header is not base64url")),
            RefusedToken(name: "payload standard base64", token: parts[0] + ".a+b/." + parts[2], expected: .malformed("payload is not base64url")),
            RefusedToken(name: "signature padded", token: valid + "=", expected: .malformed("signature is not base64url")),
            RefusedToken(name: "header not JSON", token: F.raw("alg=HS256", claims, "x"), expected: .malformed("header is not JSON")),
            RefusedToken(name: "header JSON array", token: F.raw(#"["HS256"]"#, claims, "x"), expected: .malformed("header is not a JSON object")),
            RefusedToken(name: "header repeats alg", token: F.signed(header: #"{"alg":"none","alg":"HS256"}"#, claims),
                         expected: .malformed("header repeats the member alg")),
            RefusedToken(name: "payload not JSON (signed)", token: F.signed("sub=alice"), expected: .malformed("payload is not JSON")),
            RefusedToken(name: "payload a JSON string (signed)", token: F.signed(#""alice""#), expected: .malformed("payload is not a JSON object")),
            RefusedToken(name: "payload repeats sub (signed)", token: F.signed(#"{"sub":"mallory","exp":\#(F.nowSeconds + 60),"sub":"alice"}"#),
                         expected: .malformed("payload repeats the member sub")),
            // Algorithm and header
            RefusedToken(name: "alg none, empty signature", token: F.raw(#"{"alg":"none","typ":"JWT"}"#, claims) + ".",
                         expected: .unsupportedAlgorithm("none")),
            RefusedToken(name: "alg none, HMAC-signed anyway", token: F.signed(header: #"{"alg":"none"}"#, claims),
                         expected: .unsupportedAlgorithm("none")),
            RefusedToken(name: "alg RS256 with no key set (HMAC-signed)", token: F.signed(header: #"{"alg":"RS256","typ":"JWT"}"#, claims),
                         expected: .noKey(.rs256)),
            RefusedToken(name: "alg RS512", token: F.signed(header: #"{"alg":"RS512"}"#, claims), expected: .unsupportedAlgorithm("RS512")),
            RefusedToken(name: "alg HS512", token: F.signed(header: #"{"alg":"HS512"}"#, claims), expected: .unsupportedAlgorithm("HS512")),
            RefusedToken(name: "alg lowercase hs256", token: F.signed(header: #"{"alg":"hs256"}"#, claims), expected: .unsupportedAlgorithm("hs256")),
            RefusedToken(name: "alg missing", token: F.signed(header: #"{"typ":"JWT"}"#, claims), expected: .unsupportedAlgorithm(nil)),
            RefusedToken(name: "alg not a string", token: F.signed(header: #"{"alg":256}"#, claims), expected: .unsupportedAlgorithm(nil)),
            RefusedToken(name: "typ not JWT", token: F.signed(header: #"{"alg":"HS256","typ":"JOSE+JSON"}"#, claims), expected: .unsupportedType),
            RefusedToken(name: "typ not a string", token: F.signed(header: #"{"alg":"HS256","typ":null}"#, claims), expected: .unsupportedType),
            RefusedToken(name: "crit header", token: F.signed(header: #"{"alg":"HS256","crit":["exp"]}"#, claims),
                         expected: .unsupportedCriticalHeader),
            // Signature
            RefusedToken(name: "wrong secret", token: F.signed(claims, secret: "not-the-secret"), expected: .badSignature),
            RefusedToken(name: "tampered payload", token: F.replacingPayload(of: valid, with: #"{"sub":"alice","exp":\#(F.nowSeconds + 999_999)}"#),
                         expected: .badSignature),
            RefusedToken(name: "tampered channels", token: F.replacingPayload(of: F.token(extra: #""channels":["room:1"]"#),
                                                                               with: #"{"sub":"alice","exp":\#(F.nowSeconds + 3600),"channels":["*"]}"#),
                         expected: .badSignature),
            RefusedToken(name: "tampered header", token: F.raw(#"{"alg":"HS256"}"#) + "." + parts[1] + "." + parts[2], expected: .badSignature),
            RefusedToken(name: "flipped signature byte", token: parts[0] + "." + parts[1] + "." + String(decoding: flipped, as: UTF8.self),
                         expected: .badSignature),
            RefusedToken(name: "truncated signature", token: parts[0] + "." + parts[1] + "." + Base64URL.encode(Base64URL.decode(parts[2])!.prefix(16)),
                         expected: .badSignature),
            RefusedToken(name: "empty signature", token: parts[0] + "." + parts[1] + ".", expected: .badSignature),
            // Claims
            RefusedToken(name: "missing sub", token: F.signed(#"{"exp":\#(F.nowSeconds + 60)}"#), expected: .missingClaim("sub")),
            RefusedToken(name: "missing exp", token: F.signed(#"{"sub":"alice"}"#), expected: .missingClaim("exp")),
            RefusedToken(name: "sub not a string", token: F.signed(#"{"sub":42,"exp":\#(F.nowSeconds + 60)}"#), expected: .invalidClaim("sub", "a string")),
            RefusedToken(name: "exp a string", token: F.signed(#"{"sub":"alice","exp":"\#(F.nowSeconds + 60)"}"#),
                         expected: .invalidClaim("exp", "a number of seconds since the epoch")),
            RefusedToken(name: "exp null", token: F.signed(#"{"sub":"alice","exp":null}"#),
                         expected: .invalidClaim("exp", "a number of seconds since the epoch")),
            RefusedToken(name: "exp infinite", token: F.signed(#"{"sub":"alice","exp":1e400}"#),
                         expected: .invalidClaim("exp", "a number of seconds since the epoch")),
            RefusedToken(name: "nbf a string", token: F.token(extra: #""nbf":"0""#), expected: .invalidClaim("nbf", "a number of seconds since the epoch")),
            RefusedToken(name: "iat a boolean", token: F.token(extra: #""iat":true"#), expected: .invalidClaim("iat", "a number of seconds since the epoch")),
            RefusedToken(name: "channels a string", token: F.token(extra: #""channels":"room:*""#), expected: .invalidClaim("channels", "an array of strings")),
            RefusedToken(name: "channels with a number", token: F.token(extra: #""channels":["room:*",1]"#),
                         expected: .invalidClaim("channels", "an array of strings")),
            RefusedToken(name: "channels an object", token: F.token(extra: #""channels":{"room:*":true}"#),
                         expected: .invalidClaim("channels", "an array of strings")),
            RefusedToken(name: "users a string", token: F.token(extra: #""users":"bob""#), expected: .invalidClaim("users", "an array of strings")),
            RefusedToken(name: "users with a null", token: F.token(extra: #""users":["bob",null]"#),
                         expected: .invalidClaim("users", "an array of strings")),
            RefusedToken(name: "info a string", token: F.token(extra: #""info":"Alice""#), expected: .invalidClaim("info", "a JSON object")),
            RefusedToken(name: "info an array", token: F.token(extra: #""info":[1]"#), expected: .invalidClaim("info", "a JSON object")),
            RefusedToken(name: "info over auth.maxInfoBytes", token: F.token(extra: #""info":{"name":"\#(String(repeating: "x", count: 1020))"}"#),
                         expected: .invalidClaim("info", "at most 1024 bytes encoded (auth.maxInfoBytes), not 1031")),
            RefusedToken(name: "sub is another user", token: F.token(sub: "mallory"), expected: .subjectMismatch),
            RefusedToken(name: "sub differs in case", token: F.token(sub: "Alice"), expected: .subjectMismatch),
            RefusedToken(name: "sub canonically equivalent but not byte-equal", token: F.token(sub: "e\u{301}"), userId: "\u{E9}",
                         expected: .subjectMismatch),
            RefusedToken(name: "expired", token: F.token(ttl: -3600), expected: .expired),
            RefusedToken(name: "not yet valid", token: F.token(extra: #""nbf":\#(F.nowSeconds + 3600)"#), expected: .notYetValid),
        ]
    }()

    @Test("refused tokens, each for its own reason", arguments: refusedTokens)
    func refused(_ example: RefusedToken) {
        #expect(F.refusal(example.token, userId: example.userId) == example.expected)
    }

    @Test("every refusal is UNAUTHORIZED with a message that names the reason and never the secret", arguments: refusedTokens)
    func refusalMessages(_ example: RefusedToken) throws {
        let result = F.authenticator.authenticate(userId: Name(unchecked: example.userId), token: example.token, now: F.now)
        guard case .failure(let error) = result else {
            Issue.record("accepted")
            return
        }
        #expect(error.code == .unauthorized)
        #expect(error.message == example.expected.message)
        #expect(!error.message.contains(F.secret))
        #expect(!error.message.isEmpty)
        switch example.expected {
        case .missingClaim(let claim), .invalidClaim(let claim, _): #expect(error.message.contains(claim))
        case .expired: #expect(error.message.contains("exp"))
        case .notYetValid: #expect(error.message.contains("nbf"))
        case .subjectMismatch: #expect(error.message.contains("sub"))
        case .unsupportedAlgorithm: #expect(error.message.contains("HS256"))
        default: break
        }
    }

    @Test("a hostile alg is clipped in the message")
    func longAlgIsClipped() {
        let alg = String(repeating: "A", count: 5000)
        let refusal = F.refusal(F.signed(header: #"{"alg":"\#(alg)"}"#, #"{}"#))
        #expect(refusal == .unsupportedAlgorithm(alg))
        #expect((refusal?.message.count ?? .max) < 100)
    }

    @Test("refusal codes are stable and distinct")
    func codes() {
        let all: [JWTRefusal] = [.missingToken, .malformed("x"), .unsupportedAlgorithm(nil), .unsupportedType,
                                 .unsupportedCriticalHeader, .badSignature, .missingClaim("sub"), .invalidClaim("exp", "x"),
                                 .subjectMismatch, .expired, .notYetValid]
        #expect(Set(all.map(\.code)).count == all.count)
        #expect(JWTRefusal.badSignature.code == "bad_signature")
        #expect(JWTRefusal.expired.code == "expired")
    }
}
