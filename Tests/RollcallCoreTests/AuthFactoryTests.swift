import Testing
@testable import RollcallCore

@Suite("Auth: authenticator factory")
struct AuthFactoryTests {
    typealias F = AuthFixture

    private func jwtConfiguration(secret: String? = nil, secretEnv: String? = "ROLLCALL_JWT_SECRET", skew: Double = 30) -> Configuration {
        var configuration = Configuration()
        configuration.auth.mode = .jwt
        configuration.auth.secret = secret
        configuration.auth.secretEnv = secretEnv
        configuration.auth.clockSkewSeconds = skew
        return configuration
    }

    @Test("mode none gives the open authenticator")
    func none() throws {
        let authenticator = try Authenticators.make(Configuration(), environment: ["ROLLCALL_JWT_SECRET": "x"])
        #expect(authenticator is OpenAuthenticator)
        #expect(authenticator.authenticate(userId: Name(unchecked: "a"), token: nil, now: F.now) == .success(.unlimited))
    }

    @Test("mode jwt with auth.secret verifies tokens signed with it, using auth.clockSkewSeconds")
    func jwtWithSecret() throws {
        let authenticator = try #require(try Authenticators.make(jwtConfiguration(secret: F.secret, skew: 4.5), environment: [:]) as? JWTAuthenticator)
        #expect(authenticator.verifier.clockSkewMs == 4_500)
        #expect(authenticator.authenticate(userId: Name(unchecked: "alice"), token: F.token(), now: F.now).map(\.channelPatterns) == .success(nil))
        #expect(authenticator.authenticate(userId: Name(unchecked: "alice"), token: F.token(ttl: -5), now: F.now).isFailure)
        #expect(authenticator.authenticate(userId: Name(unchecked: "alice"), token: F.token(ttl: -4), now: F.now).map(\.channelPatterns) == .success(nil))
    }

    @Test("mode jwt without auth.secret reads the variable named by auth.secretEnv")
    func jwtFromEnvironment() throws {
        let authenticator = try Authenticators.make(jwtConfiguration(secretEnv: "MY_SECRET"), environment: ["MY_SECRET": F.secret])
        #expect(authenticator.authenticate(userId: Name(unchecked: "alice"), token: F.token(), now: F.now).map(\.channelPatterns) == .success(nil))
        let other = try Authenticators.make(jwtConfiguration(secretEnv: "MY_SECRET"), environment: ["MY_SECRET": "other"])
        #expect(other.authenticate(userId: Name(unchecked: "alice"), token: F.token(), now: F.now)
                == .failure(BrokerError(.unauthorized, JWTRefusal.badSignature.message)))
    }

    @Test("auth.secret wins over the environment")
    func secretWins() throws {
        let authenticator = try Authenticators.make(jwtConfiguration(secret: F.secret), environment: ["ROLLCALL_JWT_SECRET": "other"])
        #expect(authenticator.authenticate(userId: Name(unchecked: "alice"), token: F.token(), now: F.now).map(\.channelPatterns) == .success(nil))
    }

    @Test("mode jwt with no usable secret is refused naming auth.secret and the variable, never a value",
          arguments: [
            (nil as String?, "ROLLCALL_JWT_SECRET" as String?, [:] as [String: String], "ROLLCALL_JWT_SECRET"),
            (nil, "ROLLCALL_JWT_SECRET", ["ROLLCALL_JWT_SECRET": ""], "ROLLCALL_JWT_SECRET"),
            (nil, "MY_SECRET", ["ROLLCALL_JWT_SECRET": "unused-value"], "MY_SECRET"),
            (nil, nil, ["ROLLCALL_JWT_SECRET": "unused-value"], "auth.secretEnv"),
            ("", "ROLLCALL_JWT_SECRET", ["ROLLCALL_JWT_SECRET": "unused-value"], "non-empty"),
          ])
    func noSecret(secret: String?, secretEnv: String?, environment: [String: String], mentions: String) {
        do {
            _ = try Authenticators.make(jwtConfiguration(secret: secret, secretEnv: secretEnv), environment: environment)
            Issue.record("accepted")
        } catch {
            #expect(error.keyPath == "auth.secret")
            #expect(error.description.contains(mentions))
            #expect(!error.description.contains("unused-value"))
        }
    }

    /// `auth.secrets` (PROTOCOL §3, 1.2): several HS256 secrets at once, for rotation.
    @Test("auth.secret and auth.secrets: a token signed with any of them verifies, another is refused")
    func severalSecrets() throws {
        var configuration = jwtConfiguration(secret: "new-secret")
        configuration.auth.secrets = ["old-secret", F.secret]
        let authenticator = try Authenticators.make(configuration, environment: ["ROLLCALL_JWT_SECRET": "env-secret"])
        let alice = Name(unchecked: "alice")
        for secret in ["new-secret", "old-secret", F.secret] {
            let token = F.signed(#"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#, secret: secret)
            #expect(authenticator.authenticate(userId: alice, token: token, now: F.now).map(\.channelPatterns) == .success(nil), "\(secret)")
        }
        for secret in ["env-secret", "unknown"] {
            let token = F.signed(#"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#, secret: secret)
            #expect(authenticator.authenticate(userId: alice, token: token, now: F.now)
                    == .failure(BrokerError(.unauthorized, JWTRefusal.badSignature.message)), "\(secret)")
        }
    }

    @Test("auth.secrets alone is enough for jwt mode; with the variable set, its value comes first")
    func secretsAlone() throws {
        var configuration = jwtConfiguration()
        configuration.auth.secrets = ["only-listed"]
        try ConfigurationLoader.validate(configuration, environment: [:])
        #expect(try Authenticators.secrets(configuration.auth, environment: [:]) == ["only-listed"])
        #expect(try Authenticators.secrets(configuration.auth, environment: ["ROLLCALL_JWT_SECRET": "from-env"]) == ["from-env", "only-listed"])
        configuration.auth.secret = "explicit"
        #expect(try Authenticators.secrets(configuration.auth, environment: ["ROLLCALL_JWT_SECRET": "from-env"]) == ["explicit", "only-listed"])
    }

    @Test("the factory agrees with the configuration check: what validates, builds")
    func agreesWithValidation() throws {
        let configuration = jwtConfiguration(secretEnv: "MY_SECRET")
        let environment = ["MY_SECRET": F.secret]
        try ConfigurationLoader.validate(configuration, environment: environment)
        _ = try Authenticators.make(configuration, environment: environment)
    }

    /// PROTOCOL §3 (1.2): jwt mode needs one of secret, secrets, jwksFile, jwksUrl.
    @Test("a key set alone is enough for jwt mode: no HS256 secret, HS256 tokens find no key", arguments: ["jwksFile", "jwksUrl"])
    func keySetAlone(key: String) throws {
        var configuration = jwtConfiguration()
        if key == "jwksFile" { configuration.auth.jwksFile = "jwks.json" } else { configuration.auth.jwksUrl = "https://id.example/jwks" }
        try ConfigurationLoader.validate(configuration, environment: [:])
        #expect(try Authenticators.secrets(configuration.auth, environment: [:]).isEmpty)
        let authenticator = try Authenticators.make(configuration, environment: [:])
        #expect(authenticator.check(userId: Name(unchecked: "alice"), token: F.token(), now: F.now)
                == .failure(TokenRefusal(reason: "no_key", error: BrokerError(.unauthorized, JWTRefusal.noKey(.hs256).message))))
        // The variable still adds a secret when it is set.
        #expect(try Authenticators.secrets(configuration.auth, environment: ["ROLLCALL_JWT_SECRET": "from-env"]) == ["from-env"])
    }
}

@Suite("Auth: start-up warnings")
struct AuthWarningTests {
    @Test("a short jwt secret is warned about without echoing it; a long one or mode none is not")
    func shortSecret() {
        var configuration = Configuration()
        #expect(Authenticators.warnings(configuration, environment: [:]).isEmpty)
        configuration.auth.mode = .jwt
        configuration.auth.secret = "tiny-secret"
        let warnings = Authenticators.warnings(configuration, environment: [:])
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("11 bytes") == true)
        #expect(warnings.first?.contains("tiny-secret") == false)
        configuration.auth.secret = String(repeating: "k", count: 32)
        #expect(Authenticators.warnings(configuration, environment: [:]).isEmpty)
        configuration.auth.secret = nil
        #expect(Authenticators.warnings(configuration, environment: ["ROLLCALL_JWT_SECRET": "short"]).count == 1)
        configuration.auth.secrets = [String(repeating: "k", count: 32), "tiny-listed"]
        let listed = Authenticators.warnings(configuration, environment: ["ROLLCALL_JWT_SECRET": String(repeating: "e", count: 40)])
        #expect(listed == ["auth.secrets[1] is 11 bytes; HS256 wants at least 32 random bytes (RFC 7518 §3.2)"])
    }
}

extension Result {
    /// True for `.failure` (test convenience).
    var isFailure: Bool { if case .failure = self { true } else { false } }
}
