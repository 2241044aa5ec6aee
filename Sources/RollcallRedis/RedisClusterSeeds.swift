/// `redis+cluster://[user:password@]host:port[,host:port…]`: the nodes of a Redis Cluster to
/// ask for the slot map first (port 6379 when left out), and how to log in to every master.
/// A cluster has one database, so the URL has no `/db`. `rediss+cluster://` (TLS) stays
/// refused until TLS to Redis lands.
public struct RedisClusterSeeds: Equatable, CustomStringConvertible {
    /// The seed nodes, in the URL's order (asked in turn for the slot map).
    public var seeds: [RedisHostPort]
    /// ACL user for every node's `AUTH user password`; nil: `AUTH password`.
    public var user: String?
    /// Every node's password; nil: no `AUTH`.
    public var password: String?

    /// The scheme.
    static let scheme = "redis+cluster://"
    /// A node's port when the URL gives none.
    public static let defaultPort = 6379

    /// Seeds from their parts.
    public init(seeds: [RedisHostPort], user: String? = nil, password: String? = nil) {
        self.seeds = seeds
        self.user = user
        self.password = password
    }

    /// Parses the URL; throws ``RedisError/Code/invalidEndpoint`` naming what is wrong.
    public init(parsing url: String) throws {
        let invalid = { RedisURLSyntax.invalid($0, in: url, expected: "redis+cluster://[user:password@]host:port[,host:port…]") }
        guard url.lowercased().hasPrefix(Self.scheme) else { throw invalid(.init("the scheme is not redis+cluster://")) }
        var rest = Substring(url.dropFirst(Self.scheme.count))
        let credentials = try RedisURLSyntax.takeCredentials(from: &rest).mapError(invalid).get()
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else { throw invalid(.init("a path (a Redis Cluster has only database 0)")) }
        var seeds: [RedisHostPort] = []
        for text in rest.split(separator: ",", omittingEmptySubsequences: false) {
            seeds.append(try RedisURLSyntax.hostPort(text, defaultPort: Self.defaultPort).mapError(invalid).get())
        }
        self.init(seeds: seeds, user: credentials.user, password: credentials.password)
    }

    /// The endpoint of the node at `address` (a seed, or a master the slot map names) with
    /// these credentials.
    public func node(at address: RedisHostPort) -> RedisEndpoint {
        RedisEndpoint(host: address.host, port: address.port, user: user, password: password)
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        Self.scheme + RedisURLSyntax.credentialsText(user: user, password: password)
            + seeds.map(\.description).joined(separator: ",")
    }
}
