import Crypto

/// The bearer keys the server API accepts (PROTOCOL §10): `api.keys` and the value of the
/// environment variable `api.keyEnv` names. Keys are kept as SHA-256 digests and a presented
/// key is compared with every one of them in constant time (the same work whether it matches,
/// nearly matches or has another length), so timing tells nothing about a key.
public struct ServerAPIKeys: Sendable {
    private let digests: [[UInt8]]

    /// The keys of `configuration` and of `environment[configuration.keyEnv]` (empty or unset
    /// variables add nothing). The configuration was validated (``ConfigurationLoader``).
    public init(_ configuration: Configuration.API, environment: [String: String]) {
        var keys = configuration.keys
        if let name = configuration.keyEnv, let value = environment[name], !value.isEmpty { keys.append(value) }
        digests = keys.map(Self.digest)
    }

    /// True when no key is configured: the API is off and answers 401 to everything.
    public var isEmpty: Bool { digests.isEmpty }

    /// True when `authorization` is `Bearer <key>` (scheme case-insensitive) with a configured key.
    public func accepts(authorization: String?) -> Bool {
        guard !digests.isEmpty, let key = Self.bearerKey(authorization) else { return false }
        let presented = Self.digest(key)
        var matched: UInt8 = 0
        for digest in digests {
            var difference: UInt8 = 0
            for index in 0..<digest.count { difference |= digest[index] ^ presented[index] }
            matched |= difference == 0 ? 1 : 0
        }
        return matched == 1
    }

    /// Why `key` cannot be an API key (nil when it can): shorter than
    /// ``Configuration/API/minimumKeyBytes`` bytes, or holding a byte outside printable ASCII
    /// (it travels in an HTTP header).
    public static func problem(with key: String) -> String? {
        if key.utf8.count < Configuration.API.minimumKeyBytes {
            return "an API key must be at least \(Configuration.API.minimumKeyBytes) bytes (got \(key.utf8.count))"
        }
        if key.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            return "an API key must be printable ASCII without spaces"
        }
        return nil
    }

    private static func bearerKey(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let key = parts[1].trimmingSpaces
        return key.isEmpty ? nil : key
    }

    private static func digest(_ key: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(key.utf8)))
    }
}

private extension Substring {
    var trimmingSpaces: String {
        var slice = self[...]
        while slice.last == " " || slice.last == "\t" { slice = slice.dropLast() }
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        return String(slice)
    }
}
