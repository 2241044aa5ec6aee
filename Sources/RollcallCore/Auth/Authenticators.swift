/// Builds the broker's ``LoginAuthenticator`` from its configuration.
public enum Authenticators {
    /// `auth.mode` `none` → ``OpenAuthenticator``; `jwt` → ``JWTAuthenticator`` with every
    /// HS256 secret of ``secrets(_:environment:)``, tolerating `auth.clockSkewSeconds`. Throws
    /// (key `auth.secret`) when jwt mode has neither a non-empty secret nor a key set; the
    /// message names the variable, never a secret. The key sets of `auth.jwksFile` and
    /// `auth.jwksUrl` come later, from the transport (``InboundEvent/keySet(_:_:)``).
    public static func make(_ configuration: Configuration, environment: [String: String]) throws(ConfigurationError) -> any LoginAuthenticator {
        let auth = configuration.auth
        switch auth.mode {
        case .none:
            return OpenAuthenticator()
        case .jwt:
            return JWTAuthenticator(secrets: try secrets(auth, environment: environment), clockSkewSeconds: auth.clockSkewSeconds,
                                    maxInfoBytes: auth.maxInfoBytes)
        }
    }

    /// The HS256 secrets for jwt mode (PROTOCOL §3, 1.2): `auth.secret`, else
    /// `environment[auth.secretEnv]` when set and non-empty, then each of `auth.secrets`. A
    /// token signed with any of them verifies, so the issuer's secret rotates without logging
    /// anyone out (docs/authentication.md). At least one is needed unless a key set
    /// (`auth.jwksFile`, `auth.jwksUrl`) is configured; then there may be none.
    public static func secrets(_ auth: Configuration.Auth, environment: [String: String]) throws(ConfigurationError) -> [String] {
        if let secret = auth.secret {
            guard !secret.isEmpty else {
                throw ConfigurationError(.outOfRange, keyPath: "auth.secret", message: "must be a non-empty string")
            }
            return [secret] + auth.secrets
        }
        if let name = auth.secretEnv, let value = environment[name], !value.isEmpty { return [value] + auth.secrets }
        guard auth.secrets.isEmpty, !auth.hasKeySet else { return auth.secrets }
        throw ConfigurationError(.conflict, keyPath: "auth.secret", message: Configuration.Auth.noKeyMessage(secretEnv: auth.secretEnv))
    }

    /// The stable reasons a token is refused for (`rollcall_logins_refused_total`'s `reason`
    /// label; docs/authentication.md lists them with their messages).
    public static var refusalReasons: [String] { JWTRefusal.allCodes }

    /// Bytes of secret RFC 7518 §3.2 requires for HS256 (the size of the hash output).
    static let recommendedSecretBytes = 32

    /// Things the broker should log as warnings at start (none are fatal): currently each jwt
    /// secret shorter than ``recommendedSecretBytes``. Messages never contain a secret.
    public static func warnings(_ configuration: Configuration, environment: [String: String]) -> [String] {
        let auth = configuration.auth
        guard auth.mode == .jwt, let secrets = try? secrets(auth, environment: environment) else { return [] }
        let listed = secrets.count - auth.secrets.count  // 1 when the secret (or its variable) is first
        return secrets.enumerated().compactMap { index, secret in
            guard secret.utf8.count < recommendedSecretBytes else { return nil }
            let which = index < listed ? "the auth secret" : "auth.secrets[\(index - listed)]"
            return "\(which) is \(secret.utf8.count) bytes; HS256 wants at least \(recommendedSecretBytes) random bytes (RFC 7518 §3.2)"
        }
    }
}
