/// A parsed `webhooks.url`: `http://` or `https://`, a host, an optional port and a path.
///
/// Refused: another scheme, no host, user info (`user@`), a port outside 1-65535, a
/// fragment, spaces or control characters.
public struct WebhookURL: Sendable, Equatable, CustomStringConvertible {
    /// True for `https`.
    public let secure: Bool
    /// The host to connect to (an IPv6 literal without its brackets).
    public let host: String
    /// The TCP port (default 80 for http, 443 for https).
    public let port: Int
    /// The request target: path and query, at least `/`.
    public let path: String

    /// The `Host` header: the host (bracketed when IPv6) with the port when not the default.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }

    public var description: String { "\(secure ? "https" : "http")://\(hostHeader)\(path)" }

    /// A url from its parts (no checks).
    public init(secure: Bool, host: String, port: Int, path: String) {
        self.secure = secure
        self.host = host
        self.port = port
        self.path = path
    }

    /// Parses `text`; throws a ``WebhookURLError`` naming the problem.
    public init(_ text: String) throws(WebhookURLError) {
        guard !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw WebhookURLError("must not contain spaces or control characters")
        }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            secure = true
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            secure = false
            rest = text.dropFirst(7)
        } else {
            throw WebhookURLError("must start with http:// or https://")
        }
        guard !rest.contains("#") else { throw WebhookURLError("must not have a fragment (#)") }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.isEmpty { target = "/" } else if target.hasPrefix("?") { target = "/" + target }
        path = target
        guard !authority.contains("@") else { throw WebhookURLError("must not carry user info (user@host)") }
        var hostPart = authority
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw WebhookURLError("has an unclosed [ in its host") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw WebhookURLError("has text after its IPv6 host") }
                portPart = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw WebhookURLError("must name a host") }
        host = String(hostPart)
        if let portPart {
            guard let number = Int(portPart), (1...65_535).contains(number) else {
                throw WebhookURLError("has a port outside 1-65535")
            }
            port = number
        } else {
            port = secure ? 443 : 80
        }
    }
}

/// Why a `webhooks.url` was refused.
public struct WebhookURLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with it.
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
