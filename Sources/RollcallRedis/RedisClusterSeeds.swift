/// `redis+cluster://[user:password@]host:port[,host:port…]`: the nodes of a Redis Cluster to
/// ask for the slot map first (port 6379 when left out), and how to log in to every master.
/// A cluster has one database, so the URL has no `/db`. `rediss+cluster://…` speaks TLS to
/// every node (seeds and masters, with `cluster.tls`: ``RedisTLSSettings``); the cluster must
/// then announce its TLS ports (`tls-cluster yes`), as it does to a TLS client.
public struct RedisClusterSeeds: Equatable, CustomStringConvertible {
    /// The seed nodes, in the URL's order (asked in turn for the slot map).
    public var seeds: [RedisHostPort]
    /// ACL user for every node's `AUTH user password`; nil: `AUTH password`.
    public var user: String?
    /// Every node's password; nil: no `AUTH`.
    public var password: String?
    /// True for `rediss+cluster://`: every link to a node speaks TLS.
    public var tls: Bool

    /// The scheme.
    static let scheme = "redis+cluster://"
    /// The scheme with TLS.
    static let tlsScheme = "rediss+cluster://"
    /// A node's port when the URL gives none.
    public static let defaultPort = 6379

    /// Seeds from their parts.
    public init(seeds: [RedisHostPort], user: String? = nil, password: String? = nil, tls: Bool = false) {
        self.seeds = seeds
        self.user = user
        self.password = password
        self.tls = tls
    }

    /// Parses the URL; throws ``RedisError/Code/invalidEndpoint`` naming what is wrong.
    public init(parsing url: String) throws {
        let invalid = { RedisURLSyntax.invalid($0, in: url, expected: "redis+cluster://[user:password@]host:port[,host:port…] or rediss+cluster://…") }
        let (tls, afterScheme) = try RedisURLSyntax.afterScheme(of: url, plain: Self.scheme, tls: Self.tlsScheme).mapError(invalid).get()
        var rest = afterScheme
        let credentials = try RedisURLSyntax.takeCredentials(from: &rest).mapError(invalid).get()
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else { throw invalid(.init("a path (a Redis Cluster has only database 0)")) }
        var seeds: [RedisHostPort] = []
        for text in rest.split(separator: ",", omittingEmptySubsequences: false) {
            seeds.append(try RedisURLSyntax.hostPort(text, defaultPort: Self.defaultPort).mapError(invalid).get())
        }
        self.init(seeds: seeds, user: credentials.user, password: credentials.password, tls: tls)
    }

    /// The endpoint of the node at `address` (a seed, or a master the slot map names) with
    /// these credentials, over TLS for `rediss+cluster://`: its host, as named here, is the
    /// name a TLS link checks unless `cluster.tls.serverName` is set.
    public func node(at address: RedisHostPort) -> RedisEndpoint {
        RedisEndpoint(host: address.host, port: address.port, user: user, password: password, tls: tls)
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        (tls ? Self.tlsScheme : Self.scheme) + RedisURLSyntax.credentialsText(user: user, password: password)
            + seeds.map(\.description).joined(separator: ",")
    }
}
