import RollcallProtocol

/// Turns `config.json` into a validated ``Configuration`` (PROTOCOL §8).
///
/// The steps are separate so that command-line overrides land before validation:
///
///     var configuration = try ConfigurationLoader.parse(bytes)          // types and keys
///     ConfigurationLoader.apply(host: host, port: port, to: &configuration)
///     try ConfigurationLoader.validate(configuration, environment: env)  // ranges and rules
///
/// ``load(file:host:port:environment:)`` does all three for a file. Every step is driven by
/// the table of keys in `ConfigurationKey+All.swift` and the rules in `ConfigurationRule.swift`.
public enum ConfigurationLoader {
    /// Every key path the configuration has, e.g. `presence.maxInstantEvents`, in PROTOCOL §8 order.
    static var keyPaths: [String] { ConfigurationKey.all.map(\.path) }

    /// Reads one JSON object: starts from the defaults and sets every key present.
    ///
    /// Throws for malformed JSON, a top level (or section) that is not an object, an unknown
    /// key (naming the nearest known key at that level), a value of the wrong type, and an
    /// `auth.mode` that is not a known mode. Ranges and cross-key rules are left to
    /// ``validate(_:environment:)``. When a key repeats, the last occurrence wins.
    public static func parse(_ bytes: [UInt8]) throws(ConfigurationError) -> Configuration {
        let document: JSON
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw ConfigurationError(.malformedJSON, keyPath: "", message: "not valid JSON: \(error)")
        }
        guard let object = document.objectValue else {
            throw ConfigurationError(.notAnObject, keyPath: "", message: "the configuration must be a JSON object")
        }
        var configuration = Configuration()
        try apply(object, prefix: [], keys: ConfigurationKey.all, to: &configuration)
        return configuration
    }

    /// Applies the `--host` and `--port` command-line overrides; nil leaves a value as it is.
    /// Call before ``validate(_:environment:)`` so the overrides are validated too.
    public static func apply(host: String?, port: Int?, to configuration: inout Configuration) {
        if let host { configuration.listen.host = host }
        if let port { configuration.listen.port = port }
    }

    /// Checks every key against its allowed values, then the rules between keys.
    ///
    /// `environment` is consulted for the variable named by `auth.secretEnv` when `auth.mode`
    /// is `jwt` and `auth.secret` is null. Throws the first problem found.
    public static func validate(_ configuration: Configuration, environment: [String: String]) throws(ConfigurationError) {
        for key in ConfigurationKey.all {
            if let rejected = key.rejectedValue(configuration) {
                throw ConfigurationError(.outOfRange, keyPath: key.path, message: "must be \(key.allowed ?? key.expected) (got \(rejected))")
            }
        }
        for rule in ConfigurationRule.all {
            if let problem = rule.violation(configuration, environment) {
                throw ConfigurationError(.conflict, keyPath: rule.path, message: problem)
            }
        }
    }

    /// Sets the members of `object`, which sits at `prefix`, from the keys under it.
    private static func apply(
        _ object: JSONObject, prefix: [Substring], keys: [ConfigurationKey], to configuration: inout Configuration
    ) throws(ConfigurationError) {
        let depth = prefix.count
        for (name, value) in object.members {
            let path = (prefix + [Substring(name)]).joined(separator: ".")
            let below = keys.filter { key in
                let components = key.components
                return components.count > depth && components[depth].utf8.elementsEqual(name.utf8)
            }
            guard let first = below.first else {
                throw unknownKey(name, path: path, prefix: prefix, keys: keys)
            }
            if below.count == 1, first.components.count == depth + 1 {
                try store(value, in: first, to: &configuration)
            } else {
                guard let section = value.objectValue else {
                    throw ConfigurationError(.wrongType, keyPath: path, message: "expected an object, got \(value.kindName)")
                }
                try apply(section, prefix: prefix + [Substring(name)], keys: below, to: &configuration)
            }
        }
    }

    /// Offers `value` to `key`.
    private static func store(_ value: JSON, in key: ConfigurationKey, to configuration: inout Configuration) throws(ConfigurationError) {
        switch key.assign(value, &configuration) {
        case .stored:
            return
        case .wrongType:
            throw ConfigurationError(.wrongType, keyPath: key.path, message: "expected \(key.expected), got \(value.kindName)")
        case .notAllowed(let got):
            throw ConfigurationError(.outOfRange, keyPath: key.path, message: "must be \(key.allowed ?? key.expected) (got \(got))")
        }
    }

    /// The error for an unknown member at `path`, suggesting the nearest known key at its level.
    private static func unknownKey(_ name: String, path: String, prefix: [Substring], keys: [ConfigurationKey]) -> ConfigurationError {
        var siblings: [Substring] = []
        for key in keys where !siblings.contains(key.components[prefix.count]) {
            siblings.append(key.components[prefix.count])
        }
        let nearest = siblings.min { editDistance(name, String($0)) < editDistance(name, String($1)) }
        let suggestion = nearest.map { (prefix + [$0]).joined(separator: ".") }
        let message = suggestion.map { "unknown key (did you mean \($0)?)" } ?? "unknown key"
        return ConfigurationError(.unknownKey, keyPath: path, message: message, suggestion: suggestion)
    }

}
