/// Where a Redis server is and how to log in: `redis://[[user]:password@]host[:port][/db]`
/// (`cluster.redis`, PROTOCOL §9). The port defaults to 6379 and the database to 0; the
/// password may be percent-encoded; an IPv6 host is written in brackets.
public struct RedisEndpoint: Equatable, CustomStringConvertible {
    /// Host name or IP address (without brackets).
    public var host: String
    /// TCP port.
    public var port: Int
    /// ACL user for `AUTH user password`; nil: `AUTH password` (the `default` user).
    public var user: String?
    /// Password sent with `AUTH` before anything else; nil: no `AUTH`.
    public var password: String?
    /// Database selected with `SELECT` at connect (0: no `SELECT`).
    public var database: Int

    /// An endpoint from its parts.
    public init(host: String, port: Int = 6379, user: String? = nil, password: String? = nil, database: Int = 0) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// Parses `redis://[[user]:password@]host[:port][/db]`; throws ``RedisError/Code/invalidEndpoint``
    /// naming what is wrong.
    public init(parsing url: String) throws {
        func invalid(_ why: String) -> RedisError {
            RedisError(.invalidEndpoint, "\(why) in Redis URL \"\(Self.redacted(url))\" (expected redis://[:password@]host:port[/db])")
        }
        let scheme = "redis://"
        guard url.lowercased().hasPrefix(scheme) else { throw invalid("the scheme is not redis://") }
        var rest = Substring(url.dropFirst(scheme.count))

        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = credentials.firstIndex(of: ":") else {
                throw invalid("the credentials are not [user]:password")
            }
            let userPart = credentials[..<colon]
            guard let decodedUser = Self.percentDecoded(userPart),
                  let decodedPassword = Self.percentDecoded(credentials[credentials.index(after: colon)...])
            else { throw invalid("a bad percent escape in the credentials") }
            user = decodedUser.isEmpty ? nil : decodedUser
            password = decodedPassword
        }

        var databaseText: Substring?
        if let slash = rest.firstIndex(of: "/") {
            databaseText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }

        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("an unclosed [ in the host") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("text after the IPv6 host") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw invalid("no host") }

        var port = 6379
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("the port \"\(portText)\" is not a number from 1 to 65535")
            }
            port = value
        }
        var database = 0
        if let databaseText, !databaseText.isEmpty {
            guard let value = Int(databaseText), value >= 0 else {
                throw invalid("the database \"\(databaseText)\" is not a number from 0 up")
            }
            database = value
        }
        self.init(host: String(host), port: port, user: user, password: password, database: database)
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        let credentials = password == nil ? "" : "\(user ?? ""):***@"
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "redis://\(credentials)\(host):\(port)" + (database == 0 ? "" : "/\(database)")
    }

    /// `url` with anything between `://` and the last `@` replaced (error messages never show a password).
    private static func redacted(_ url: String) -> String {
        guard let at = url.lastIndex(of: "@"), let schemeEnd = url.range(of: "://") else { return url }
        return String(url[..<schemeEnd.upperBound]) + "***" + String(url[at...])
    }

    private static func percentDecoded(_ text: Substring) -> String? {
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
}
