/// Which Redis `cluster.redis` names (PROTOCOL §9, "Which Redis"), parsed once at start:
///
/// - `redis://[user:password@]host:port[/db]` or `rediss://…` (TLS): one server (``RedisEndpoint``);
/// - `redis+sentinel://[user:password@]host:port[,host:port…]/masterName[/db]` or
///   `rediss+sentinel://…` (TLS to the sentinels and the master): the master that the
///   sentinels name (``RedisSentinelSet``), found again after every loss;
/// - `redis+cluster://[user:password@]host:port[,host:port…]` or `rediss+cluster://…` (TLS to
///   every node): a Redis Cluster (``RedisClusterSeeds``), spoken by ``RedisClusterClient``
///   (one ``RedisConnection`` per master); the broker spreads its keys over 1024 key groups
///   there (docs/cluster.md, "Key groups and buckets").
public enum RedisTarget: Equatable, CustomStringConvertible {
    /// One Redis server.
    case server(RedisEndpoint)
    /// Redis with Sentinel: the master of `masterName` as the sentinels announce it.
    case sentinel(RedisSentinelSet)
    /// A Redis Cluster: the seed nodes to ask for the slot map, and the masters' credentials.
    case cluster(RedisClusterSeeds)

    /// Parses `cluster.redis`; throws ``RedisError`` (``RedisError/Code/invalidEndpoint``)
    /// naming what is wrong, never the password.
    public init(parsing url: String) throws {
        let lowered = url.lowercased()
        if lowered.hasPrefix(RedisSentinelSet.scheme) || lowered.hasPrefix(RedisSentinelSet.tlsScheme) {
            self = .sentinel(try RedisSentinelSet(parsing: url))
        } else if lowered.hasPrefix(RedisClusterSeeds.scheme) || lowered.hasPrefix(RedisClusterSeeds.tlsScheme) {
            self = .cluster(try RedisClusterSeeds(parsing: url))
        } else if lowered.hasPrefix("redis://") || lowered.hasPrefix("rediss://") {
            self = .server(try RedisEndpoint(parsing: url))
        } else {
            throw RedisError(.invalidEndpoint, "the scheme is not redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster:// in Redis URL \"\(RedisURLSyntax.redacted(url))\"")
        }
    }

    /// True for ``sentinel(_:)``: a link checks that the address answers `ROLE` as master,
    /// and a `READONLY` reply sends it back to the sentinels.
    public var isSentinel: Bool {
        if case .sentinel = self { return true }
        return false
    }

    /// True for `rediss://`, `rediss+sentinel://` and `rediss+cluster://`: every link (to the
    /// sentinels, to every node of a Redis Cluster) speaks TLS.
    public var usesTLS: Bool {
        switch self {
        case .server(let endpoint): endpoint.tls
        case .sentinel(let set): set.tls
        case .cluster(let seeds): seeds.tls
        }
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        switch self {
        case .server(let endpoint): endpoint.description
        case .sentinel(let set): set.description
        case .cluster(let seeds): seeds.description
        }
    }
}

/// `redis+sentinel://[user:password@]host:port[,host:port…]/masterName[/db]`: the sentinels to
/// ask (port 26379 when left out) for the master of `masterName`, and how to log in to it.
/// The credentials and the database are the master's; a sentinel is asked without `AUTH`
/// unless it answers `NOAUTH` (it requires a password): then with the same credentials
/// (docs/configuration.md). `rediss+sentinel://` speaks TLS to the sentinels and the master.
public struct RedisSentinelSet: Equatable, CustomStringConvertible {
    /// The sentinels, in the URL's order (asked in turn, starting with the last that answered).
    public var sentinels: [RedisHostPort]
    /// The master's name in the sentinels' configuration (`sentinel monitor <name> …`).
    public var masterName: String
    /// ACL user for the master's `AUTH user password`; nil: `AUTH password`.
    public var user: String?
    /// The master's password; nil: no `AUTH`.
    public var password: String?
    /// Database selected on the master.
    public var database: Int
    /// True for `rediss+sentinel://`: the sentinels and the master are reached over TLS.
    public var tls: Bool

    /// The scheme.
    static let scheme = "redis+sentinel://"
    /// The scheme with TLS.
    static let tlsScheme = "rediss+sentinel://"
    /// A sentinel's port when the URL gives none.
    public static let defaultPort = 26379

    /// A set from its parts.
    public init(sentinels: [RedisHostPort], masterName: String, user: String? = nil, password: String? = nil, database: Int = 0, tls: Bool = false) {
        (self.sentinels, self.masterName, self.tls) = (sentinels, masterName, tls)
        (self.user, self.password, self.database) = (user, password, database)
    }

    /// Parses the URL; throws ``RedisError/Code/invalidEndpoint`` naming what is wrong.
    public init(parsing url: String) throws {
        let invalid = { RedisURLSyntax.invalid($0, in: url, expected: "redis+sentinel://[user:password@]host:port[,host:port…]/masterName[/db] or rediss+sentinel://…") }
        let (tls, afterScheme) = try RedisURLSyntax.afterScheme(of: url, plain: Self.scheme, tls: Self.tlsScheme).mapError(invalid).get()
        var rest = afterScheme
        let credentials = try RedisURLSyntax.takeCredentials(from: &rest).mapError(invalid).get()
        guard let slash = rest.firstIndex(of: "/") else { throw invalid(.init("no /masterName")) }
        let hosts = rest[..<slash]
        let path = rest[rest.index(after: slash)...].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        var sentinels: [RedisHostPort] = []
        for text in hosts.split(separator: ",", omittingEmptySubsequences: false) {
            sentinels.append(try RedisURLSyntax.hostPort(text, defaultPort: Self.defaultPort).mapError(invalid).get())
        }
        guard let nameText = path.first, !nameText.isEmpty else { throw invalid(.init("no master name")) }
        guard let name = RedisURLSyntax.percentDecoded(nameText) else { throw invalid(.init("a bad percent escape in the master name")) }
        guard !name.contains(where: { $0.isWhitespace || $0.isNewline }) else { throw invalid(.init("a space in the master name")) }
        let database = try RedisURLSyntax.database(path.count > 1 ? path[1] : nil).mapError(invalid).get()
        self.init(sentinels: sentinels, masterName: name, user: credentials.user, password: credentials.password, database: database, tls: tls)
    }

    /// The master's endpoint at `address` (as the sentinels name it): this set's credentials and database.
    public func master(at address: RedisHostPort) -> RedisEndpoint {
        RedisEndpoint(host: address.host, port: address.port, user: user, password: password, database: database, tls: tls)
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        (tls ? Self.tlsScheme : Self.scheme) + RedisURLSyntax.credentialsText(user: user, password: password)
            + sentinels.map(\.description).joined(separator: ",") + "/\(masterName)" + (database == 0 ? "" : "/\(database)")
    }
}
