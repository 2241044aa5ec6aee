/// Where a Redis server is and how to log in: `redis://[[user]:password@]host[:port][/db]`, or
/// `rediss://…` for TLS (`cluster.redis`, PROTOCOL §9). The port defaults to 6379 and the
/// database to 0; the password may be percent-encoded; an IPv6 host is written in brackets.
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
    /// True for `rediss://`: links speak TLS (``RedisTLSSettings``).
    public var tls: Bool
    /// The host as it was named before it was resolved to ``host`` (the name a TLS link checks
    /// by default); nil when ``host`` is that name.
    var namedHost: String?

    /// The host and port.
    public var address: RedisHostPort { RedisHostPort(host: host, port: port) }

    /// This endpoint (credentials, database) at another host and port: where a link connects
    /// once a name is resolved or the sentinels named the master.
    public func at(_ address: RedisHostPort) -> RedisEndpoint {
        var endpoint = RedisEndpoint(host: address.host, port: address.port, user: user, password: password, database: database, tls: tls)
        endpoint.namedHost = address.host == host ? namedHost : (namedHost ?? host)
        return endpoint
    }

    /// An endpoint from its parts.
    public init(host: String, port: Int = 6379, user: String? = nil, password: String? = nil, database: Int = 0, tls: Bool = false) {
        (self.host, self.port, self.tls) = (host, port, tls)
        (self.user, self.password, self.database) = (user, password, database)
    }

    /// `AUTH [user] password` with this endpoint's credentials; nil when it has no password.
    var authArguments: [[UInt8]]? {
        password.map { password in [Array("AUTH".utf8)] + (user.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)] }
    }

    /// Parses `redis://[[user]:password@]host[:port][/db]` or `rediss://…`; throws
    /// ``RedisError/Code/invalidEndpoint`` naming what is wrong.
    public init(parsing url: String) throws {
        let invalid = { RedisURLSyntax.invalid($0, in: url, expected: "redis://[:password@]host:port[/db] or rediss://…") }
        let (tls, afterScheme) = try RedisURLSyntax.afterScheme(of: url, plain: "redis://", tls: "rediss://").mapError(invalid).get()
        var rest = afterScheme
        let credentials = try RedisURLSyntax.takeCredentials(from: &rest).mapError(invalid).get()
        var databaseText: Substring?
        if let slash = rest.firstIndex(of: "/") {
            databaseText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        let address = try RedisURLSyntax.hostPort(rest, defaultPort: 6379).mapError(invalid).get()
        let database = try RedisURLSyntax.database(databaseText).mapError(invalid).get()
        self.init(host: address.host, port: address.port, user: credentials.user, password: credentials.password, database: database, tls: tls)
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        (tls ? "rediss://" : "redis://") + RedisURLSyntax.credentialsText(user: user, password: password)
            + RedisHostPort(host: host, port: port).description + (database == 0 ? "" : "/\(database)")
    }
}
