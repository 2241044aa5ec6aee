/// The pieces `cluster.redis` URLs share (``RedisEndpoint``, ``RedisTarget``): credentials,
/// `host[:port]` with bracketed IPv6, percent escapes, and the redacted form for messages.
enum RedisURLSyntax {
    /// What follows the scheme `plain` or its TLS form `tls` (either in any case) at the start
    /// of `url`, and whether it was `tls`; a message when `url` starts with neither.
    static func afterScheme(of url: String, plain: String, tls: String) -> Result<(tls: Bool, rest: Substring), Failure> {
        let lowered = url.lowercased()
        if lowered.hasPrefix(tls) { return .success((true, Substring(url.dropFirst(tls.count)))) }
        if lowered.hasPrefix(plain) { return .success((false, Substring(url.dropFirst(plain.count)))) }
        return .failure(Failure("the scheme is not \(plain) or \(tls)"))
    }

    /// `[[user]:password@]` taken off the front of `rest` (the last `@` ends it, so a password
    /// may hold an unescaped `@`); a message (to which the caller adds the URL) when malformed.
    static func takeCredentials(from rest: inout Substring) -> Result<(user: String?, password: String?), Failure> {
        guard let at = rest.lastIndex(of: "@") else { return .success((nil, nil)) }
        let credentials = rest[..<at]
        rest = rest[rest.index(after: at)...]
        guard let colon = credentials.firstIndex(of: ":") else {
            return .failure(Failure("the credentials are not [user]:password"))
        }
        guard let user = percentDecoded(credentials[..<colon]),
              let password = percentDecoded(credentials[credentials.index(after: colon)...])
        else { return .failure(Failure("a bad percent escape in the credentials")) }
        return .success((user.isEmpty ? nil : user, password))
    }

    /// `host[:port]` or `[v6][:port]`, the port defaulting to `defaultPort`.
    static func hostPort(_ text: Substring, defaultPort: Int) -> Result<RedisHostPort, Failure> {
        let host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return .failure(Failure("an unclosed [ in the host")) }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return .failure(Failure("text after the IPv6 host")) }
                portText = after.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        } else {
            host = text
        }
        guard !host.isEmpty else { return .failure(Failure("no host")) }
        var port = defaultPort
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                return .failure(Failure("the port \"\(portText)\" is not a number from 1 to 65535"))
            }
            port = value
        }
        return .success(RedisHostPort(host: String(host), port: port))
    }

    /// The database number of a URL's path (empty: 0).
    static func database(_ text: Substring?) -> Result<Int, Failure> {
        guard let text, !text.isEmpty else { return .success(0) }
        guard let value = Int(text), value >= 0 else {
            return .failure(Failure("the database \"\(text)\" is not a number from 0 up"))
        }
        return .success(value)
    }

    /// The error for a malformed `url`: what is wrong, the URL with its password hidden, and
    /// the form `expected` (``RedisError/Code/invalidEndpoint``).
    static func invalid(_ failure: Failure, in url: String, expected: String) -> RedisError {
        RedisError(.invalidEndpoint, "\(failure.why) in Redis URL \"\(redacted(url))\" (expected \(expected))")
    }

    /// `url` with anything between `://` and the last `@` replaced (error messages never show a password).
    static func redacted(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@"), let schemeEnd = url.range(of: "://") else { return url }
        return String(url[..<schemeEnd.upperBound]) + "***" + String(url[at...])
    }

    /// `user:***@` when there is a password (logs and messages), else nothing.
    static func credentialsText(user: String?, password: String?) -> String {
        password == nil ? "" : "\(user ?? ""):***@"
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex else { return nil }
                let low = utf8.index(after: high)
                guard low < utf8.endIndex,
                      let value = UInt8(String(decoding: [utf8[high], utf8[low]], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                index = utf8.index(after: low)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// What is wrong with a URL, without the URL (the caller adds it, redacted).
    struct Failure: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }
}

/// A host (name or address, IPv6 without brackets) and a TCP port.
public struct RedisHostPort: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Host name or IP address.
    public var host: String
    /// TCP port.
    public var port: Int

    /// A host and port.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, an IPv6 address in brackets.
    public var description: String { (host.contains(":") ? "[\(host)]" : host) + ":\(port)" }
}
