/// Builds the broker's ``LoginAuthenticator`` from its configuration.
public enum Authenticators {
    /// `auth.mode` `none` → ``OpenAuthenticator``; `jwt` → ``JWTAuthenticator`` with
    /// `auth.secret`, or else the value of the environment variable named by `auth.secretEnv`,
    /// tolerating `auth.clockSkewSeconds`. Throws (key `auth.secret`, code `conflict`) when jwt
    /// mode has no non-empty secret; the message names the variable, never a secret.
    public static func make(_ configuration: Configuration, environment: [String: String]) throws(ConfigurationError) -> any LoginAuthenticator {
        let auth = configuration.auth
        switch auth.mode {
        case .none:
            return OpenAuthenticator()
        case .jwt:
            return JWTAuthenticator(secret: try secret(auth, environment: environment), clockSkewSeconds: auth.clockSkewSeconds,
                                    maxInfoBytes: auth.maxInfoBytes)
        }
    }

    /// The HS256 secret for jwt mode: `auth.secret`, else `environment[auth.secretEnv]`.
    public static func secret(_ auth: Configuration.Auth, environment: [String: String]) throws(ConfigurationError) -> String {
        if let secret = auth.secret {
            guard !secret.isEmpty else {
                throw ConfigurationError(.outOfRange, keyPath: "auth.secret", message: "must be a non-empty string")
            }
            return secret
        }
        guard let name = auth.secretEnv else {
            throw ConfigurationError(.conflict, keyPath: "auth.secret", message: "auth.mode \"jwt\" needs auth.secret or auth.secretEnv")
        }
        guard let value = environment[name], !value.isEmpty else {
            throw ConfigurationError(.conflict, keyPath: "auth.secret",
                                     message: "auth.mode \"jwt\" needs auth.secret or a non-empty environment variable \(name) (auth.secretEnv)")
        }
        return value
    }

    /// Bytes of secret RFC 7518 §3.2 requires for HS256 (the size of the hash output).
    static let recommendedSecretBytes = 32

    /// Things the broker should log as warnings at start (none are fatal): currently a jwt
    /// secret shorter than ``recommendedSecretBytes``. Messages never contain the secret.
    public static func warnings(_ configuration: Configuration, environment: [String: String]) -> [String] {
        guard configuration.auth.mode == .jwt,
              let secret = try? secret(configuration.auth, environment: environment),
              secret.utf8.count < recommendedSecretBytes else { return [] }
        return ["the auth secret is \(secret.utf8.count) bytes; HS256 wants at least \(recommendedSecretBytes) random bytes (RFC 7518 §3.2)"]
    }
}
