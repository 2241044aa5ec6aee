/// Builds the broker's ``LoginAuthenticator`` from its configuration.
public enum Authenticators {
    /// `auth.mode` `none` → ``OpenAuthenticator``; `jwt` → ``JWTAuthenticator`` with every
    /// HS256 secret of ``secrets(_:environment:)``, tolerating `auth.clockSkewSeconds`. Throws
    /// (key `auth.secret`) when jwt mode has no non-empty secret; the message names the
    /// variable, never a secret.
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
    /// anyone out (docs/authentication.md). At least one is needed.
    public static func secrets(_ auth: Configuration.Auth, environment: [String: String]) throws(ConfigurationError) -> [String] {
        if let secret = auth.secret {
            guard !secret.isEmpty else {
                throw ConfigurationError(.outOfRange, keyPath: "auth.secret", message: "must be a non-empty string")
            }
            return [secret] + auth.secrets
        }
        if let name = auth.secretEnv, let value = environment[name], !value.isEmpty { return [value] + auth.secrets }
        guard auth.secrets.isEmpty else { return auth.secrets }
        guard let name = auth.secretEnv else {
            throw ConfigurationError(.conflict, keyPath: "auth.secret", message: "auth.mode \"jwt\" needs auth.secret, auth.secrets or auth.secretEnv")
        }
        throw ConfigurationError(.conflict, keyPath: "auth.secret",
                                 message: "auth.mode \"jwt\" needs auth.secret, auth.secrets or a non-empty environment variable \(name) (auth.secretEnv)")
    }

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
