/// A parsed `ws://host:port/path` (or `wss://`) address.
public struct WebSocketURL: Sendable, Equatable, CustomStringConvertible {
    /// True for `wss://`.
    public var secure: Bool
    /// Host name or address, without brackets.
    public var host: String
    /// TCP port (default 80 for `ws`, 443 for `wss`).
    public var port: Int
    /// Path including the leading `/` and any query.
    public var path: String

    /// Parses `ws://host[:port][/path]`; throws ``ClientError/invalidURL(_:)`` otherwise.
    public init(_ text: String) throws(ClientError) {
        var rest = Substring(text)
        if rest.hasPrefix("ws://") { secure = false; rest = rest.dropFirst(5) }
        else if rest.hasPrefix("wss://") { secure = true; rest = rest.dropFirst(6) }
        else { throw .invalidURL(text) }
        let authority: Substring
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = String(rest[slash...])
        } else {
            authority = rest
            path = "/"
        }
        var hostPart = authority
        var portPart: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .invalidURL(text) }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portPart = after.dropFirst() } else if !after.isEmpty { throw .invalidURL(text) }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw .invalidURL(text) }
        host = String(hostPart)
        if let portPart {
            guard let value = Int(portPart), (1...65535).contains(value) else { throw .invalidURL(text) }
            port = value
        } else {
            port = secure ? 443 : 80
        }
    }

    /// The `Host` header value.
    public var hostHeader: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(h):\(port)"
    }

    public var description: String { "\(secure ? "wss" : "ws")://\(hostHeader)\(path)" }
}
