import RollcallProtocol
import RollcallTestSupport
import Testing
@testable import RollcallCore

/// Key rotation through the broker (PROTOCOL §3, 1.2): the transport hands each key set in as
/// ``InboundEvent/keySet(_:_:)``; a key added logs in at once, a key removed refuses new
/// logins and refreshes while sessions on it keep running; refusals are counted by reason.
@Suite("Auth: key rotation in the broker")
struct AuthKeyRotationTests {
    typealias F = AuthFixture

    static let old = TestSigningKey.rsa(kid: "2026-01")
    static let new = TestSigningKey.ed25519(kid: "2026-02")

    /// A broker in jwt mode with no HS256 secret and the file key set `keys`.
    private func harness(_ keys: [TestSigningKey]) throws -> PresenceHarness {
        let harness = PresenceHarness(authenticator: JWTAuthenticator(secrets: []))
        try use(keys, harness)
        return harness
    }

    private func use(_ keys: [TestSigningKey], _ harness: PresenceHarness, source: JWKSetSource = .file) throws {
        harness.run(.keySet(source, try JWKSet.parse(Array(TestSigningKey.jwks(keys).utf8))))
    }

    private func token(_ key: TestSigningKey, _ user: String) -> JSON {
        .string(key.token(sub: user, now: F.nowSeconds))
    }

    /// Logs `user` in with `key`'s token on a new connection; the error code, or nil when it logged in.
    private func refusedLogin(_ harness: PresenceHarness, _ user: String, _ key: TestSigningKey) -> String? {
        do {
            _ = try harness.login(user, ["token": token(key, user)])
            return nil
        } catch let failure as HarnessRequestFailed {
            return failure.reply["error"]?["code"]?.stringValue
        } catch {
            return "\(error)"
        }
    }

    @Test("add the new key, then remove the old one: nobody logged in is cut, new logins follow the set")
    func rotation() throws {
        let harness = try harness([Self.old])
        let alice = try harness.login("alice", ["token": token(Self.old, "alice")])
        try alice.ok("join", [("channel", "lobby")])

        try use([Self.old, Self.new], harness)
        let bob = try harness.login("bob", ["token": token(Self.new, "bob")])
        #expect(refusedLogin(harness, "carol", Self.old) == nil)

        try use([Self.new], harness)
        #expect(refusedLogin(harness, "dave", Self.old) == "UNAUTHORIZED")
        #expect(harness.closes.values.filter { $0 == .unauthorized }.count == 1)
        // alice's session, logged in with the removed key, runs until its token's exp.
        try alice.ok("publish", [("channel", "lobby"), ("message", "still here")])
        try alice.ok("ping")
        try bob.ok("join", [("channel", "lobby")])
        #expect(alice.presenceEvents().contains { $0["type"] == "join" && $0["publisher"] == "bob" })
        // A refresh with a token of the removed key is refused; the connection stays.
        #expect(alice.errorCode("refresh", [("token", token(Self.old, "alice"))]) == "UNAUTHORIZED")
        #expect(harness.closes[alice.connection] == nil)
        #expect(try alice.ok("refresh", [("token", token(Self.new, "alice"))])["expiresAt"] == .int((F.nowSeconds + 3600) * 1000))

        #expect(harness.broker.metrics.loginRefusals == ["unknown_kid": 1])
        #expect(harness.broker.metrics.refreshRefusals == ["unknown_kid": 1])
    }

    @Test("the URL's set and the file's set are separate: replacing one keeps the other's keys")
    func twoSources() throws {
        let harness = try harness([Self.old])
        try use([Self.new], harness, source: .url)
        #expect(refusedLogin(harness, "alice", Self.old) == nil)
        #expect(refusedLogin(harness, "bob", Self.new) == nil)
        try use([TestSigningKey.p256()], harness, source: .url)
        #expect(refusedLogin(harness, "carol", Self.old) == nil)
        #expect(refusedLogin(harness, "dave", Self.new) == "UNAUTHORIZED")
    }

    @Test("refusals are counted by reason; a login refused for another cause is not", arguments: [
        ("expired", Self.old.token(sub: "mallory", now: F.nowSeconds - 7200, ttl: 60)),
        ("unknown_kid", TestSigningKey.rsa(kid: "gone").token(sub: "mallory", now: F.nowSeconds)),
        ("key_mismatch", TestSigningKey.p256(kid: "2026-01").token(sub: "mallory", now: F.nowSeconds)),
        ("no_key", F.token(sub: "mallory")),
        ("unsupported_algorithm", F.raw(#"{"alg":"none"}"#, #"{"sub":"mallory","exp":\#(F.nowSeconds + 60)}"#) + "."),
        ("bad_signature", TestSigningKey.otherRSA(kid: "2026-01").token(sub: "mallory", now: F.nowSeconds)),
        ("subject_mismatch", Self.old.token(sub: "someone-else", now: F.nowSeconds)),
    ])
    func refusalsByReason(_ reason: String, _ token: String) throws {
        let harness = try harness([Self.old])
        #expect(refusedLogin(harness, "mallory", TestSigningKey(kid: nil, Self.old.material)) == nil)
        do {
            _ = try harness.login("mallory", ["token": .string(token)])
            Issue.record("\(reason): logged in")
        } catch let failure as HarnessRequestFailed {
            #expect(failure.reply["error"]?["code"] == "UNAUTHORIZED")
        }
        #expect(harness.broker.metrics.loginRefusals == [reason: 1])
        #expect(throws: HarnessRequestFailed.self) {
            try harness.login("mallory", ["token": self.token(Self.old, "mallory"), "customStatus": .string(String(repeating: "x", count: 500))])
        }
        #expect(harness.broker.metrics.loginRefusals == [reason: 1])
    }
}
