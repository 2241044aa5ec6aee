extension Configuration.Auth {
    /// True when a JWK Set is configured (`jwksFile` or `jwksUrl`, 1.2).
    public var hasKeySet: Bool { jwksFile != nil || jwksUrl != nil }

    /// Why jwt mode cannot start: it has no key of any kind (PROTOCOL §3: it needs at least one
    /// of `secret`, `secrets`, `jwksFile`, `jwksUrl`; `secretEnv`'s variable counts as the secret).
    static func noKeyMessage(secretEnv: String?) -> String {
        let keys = "auth.secret, auth.secrets, auth.jwksFile, auth.jwksUrl"
        guard let name = secretEnv else { return "auth.mode \"jwt\" needs \(keys) or auth.secretEnv" }
        return "auth.mode \"jwt\" needs \(keys) or a non-empty environment variable \(name) (auth.secretEnv)"
    }
}
