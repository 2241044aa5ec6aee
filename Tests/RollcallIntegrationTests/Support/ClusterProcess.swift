import Foundation
@_spi(Testing) import RollcallClient
import RollcallTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A Rollcall cluster for one test (PROTOCOL §9): its own `redis-server` on a free loopback port
/// (no persistence, own temp dir) or a Redis Cluster it is given (``Store/redisCluster(_:)``: the
/// process-wide ``ProcessRedisCluster``, or a test's own), three `rollcall` nodes `n1`…`n3` with the test's config plus a
/// `cluster` section (a key prefix unique to this cluster; `heartbeatSeconds` 0.2 and
/// `nodeTimeoutSeconds` 1 unless the test's config sets them), each on its own
/// port, and nginx round-robin in front of them. Everything is killed when the value goes away
/// (``stopAll()``), whether the test passed or not; a Redis Cluster is left running (its owner
/// kills it).
final class ClusterProcess: BrokerUnderTest, @unchecked Sendable {
    /// How ``connect(recordTranscript:)`` picks a node.
    enum Routing {
        /// Straight to the nodes in rotation: n1, n2, n3, n1, … (deterministic).
        case direct
        /// Through nginx's round-robin (what a deployment does).
        case proxy
    }

    /// Where the nodes keep the cluster's state (`cluster.redis`).
    enum Store {
        /// One redis-server, this cluster's own or given by the test.
        case server(RedisServer)
        /// A Redis Cluster (`redis+cluster://` with every node as a seed), shared or the test's.
        case redisCluster(RedisClusterNodes)
    }

    /// What the nodes run on.
    let store: Store
    /// The cluster's Redis (``RedisServer/kill()``, ``RedisServer/restart(timeout:)``,
    /// ``RedisServer/suspend()`` for outage tests); only for a cluster on one redis-server
    /// (a cluster on a Redis Cluster has none: ask ``redisCluster``).
    var redis: RedisServer {
        guard case .server(let server) = store else {
            preconditionFailure("this cluster runs on a Redis Cluster, not one redis-server: use redisCluster")
        }
        return server
    }
    /// The Redis Cluster the nodes run on, or nil on one redis-server.
    var redisCluster: RedisClusterNodes? {
        guard case .redisCluster(let nodes) = store else { return nil }
        return nodes
    }
    /// The `cluster.keyPrefix` of every node, unique to this cluster.
    let keyPrefix: String
    /// The round-robin proxy in front of the nodes.
    let proxy: NginxProxy
    let routing: Routing
    private let lock = NSLock()
    private var nodeProcesses: [BrokerProcess]
    private var rotation = 0
    private let sharedConfig: [String: Any]
    private let redisPortForNode: (@Sendable (Int) -> Int)?

    /// Starts Redis, `nodeCount` nodes (in parallel) and the proxy, then waits until every node
    /// is connected to Redis and sees all the others (`rollcall_cluster_nodes`).
    ///
    /// `redis` is a server the caller started (e.g. with the append-only file on); nil starts a
    /// throwaway one. `redisPortForNode` gives the port node `index` reaches Redis on (a proxy in
    /// front of it that a test can cut); nil points every node at Redis itself. `redisURL` is
    /// the nodes' `cluster.redis` when they should not name `redis` directly (a
    /// `redis+sentinel://` URL whose sentinels watch it). `redisCluster`, when given, is what
    /// the nodes run on instead of any redis-server (`cluster.redis` its `redis+cluster://` URL
    /// naming every node as a seed); it is not stopped with the cluster.
    init(config: [String: Any] = [:], routing: Routing = .direct, nodeCount: Int = 3, formTimeout: TimeInterval = 15,
         redis givenRedis: RedisServer? = nil, redisURL givenURL: String? = nil, redisPortForNode: (@Sendable (Int) -> Int)? = nil,
         redisCluster: RedisClusterNodes? = nil) throws {
        self.routing = routing
        let redisURL: String
        if let redisCluster {
            precondition(givenRedis == nil && givenURL == nil && redisPortForNode == nil, "a Redis Cluster or one redis-server, not both")
            store = .redisCluster(redisCluster)
            redisURL = redisCluster.url
        } else {
            let server = try givenRedis ?? Self.retried { try RedisServer() }
            store = .server(server)
            redisURL = givenURL ?? server.url()
        }
        self.redisPortForNode = redisPortForNode
        keyPrefix = "t" + UUID().uuidString.prefix(8).lowercased() + ":"
        // Fast heartbeats unless the test says otherwise; Redis and the prefix are the harness's.
        let timing: [String: Any] = ["cluster": ["heartbeatSeconds": 0.2, "nodeTimeoutSeconds": 1]]
        sharedConfig = BrokerProcess.merge(BrokerProcess.merge(timing, config), ["cluster": ["redis": redisURL, "keyPrefix": keyPrefix]])
        nodeProcesses = try Self.startInParallel(count: nodeCount) { [sharedConfig, redisPortForNode] index in
            try BrokerProcess(config: Self.nodeConfig(sharedConfig, index: index, redisPort: redisPortForNode?(index)))
        }
        do {
            proxy = try Self.retried { [nodeProcesses] in try NginxProxy(upstreamPorts: nodeProcesses.map(\.port)) }
        } catch {
            for node in nodeProcesses { node.kill() }
            if case .server(let server) = store { server.kill() }
            throw error
        }
        guard waitUntilFormed(timeout: formTimeout) else {
            let report = describeNodes()
            stopAll()
            throw HarnessError("cluster did not form within \(formTimeout) s: \(report)")
        }
    }

    /// The node ids, in order: `n1`, `n2`, ….
    var nodeIds: [String] { (1...nodeCount).map { "n\($0)" } }

    /// How many nodes the cluster was started with.
    var nodeCount: Int { lock.withLock { nodeProcesses.count } }

    /// The process of node `index` (0-based; restarted nodes are new processes).
    func node(_ index: Int) -> BrokerProcess { lock.withLock { nodeProcesses[index] } }

    /// The proxy's URL, which is what a client of the cluster is given.
    var url: String { proxy.url() }

    /// `ws://127.0.0.1:PORT/v1` of node `index`.
    func nodeURL(_ index: Int) -> String { node(index).url(path: "/v1") }

    /// The Redis port (for `redis-cli -p`, or ``RedisWire``): the redis-server's, or on a Redis
    /// Cluster the port of the master that serves the control slot now (`<prefix>{0}`: the
    /// cluster's `meta`, `nodes` and group 0's keys; the other key groups spread over every
    /// master; 0 when no node of it answers).
    var redisPort: Int {
        switch store {
        case .server(let server): server.port
        case .redisCluster(let nodes): (try? nodes.masterPort(servingKey: keyPrefix + "{0}")) ?? 0
        }
    }

    /// The config node `index` runs with (the test's config, the cluster section, its node id),
    /// deep-merged with `override`: for starting a node that should be refused.
    func config(forNode index: Int, overriding override: [String: Any] = [:]) -> [String: Any] {
        BrokerProcess.merge(BrokerProcess.merge(BrokerProcess.baseConfig,
                                                Self.nodeConfig(sharedConfig, index: index, redisPort: redisPortForNode?(index))), override)
    }

    /// Opens a WebSocket to the next node in rotation (``Routing/direct``) or through the proxy.
    func connect(recordTranscript: Bool) throws -> RollcallConnection {
        switch routing {
        case .direct:
            let index = lock.withLock { () -> Int in
                defer { rotation += 1 }
                return rotation % nodeProcesses.count
            }
            return try connect(node: index, recordTranscript: recordTranscript)
        case .proxy:
            return try RollcallConnection.connect(url: proxy.url(), subprotocol: "rollcall.v1",
                                                  recordTranscript: recordTranscript, timeout: .seconds(5))
        }
    }

    /// Opens a WebSocket to node `index`.
    func connect(node index: Int, recordTranscript: Bool = false) throws -> RollcallConnection {
        try node(index).connect(path: "/v1", recordTranscript: recordTranscript)
    }

    func session(_ userId: String, recordTranscript: Bool) throws -> RollcallConnection {
        try Self.logIn(try connect(recordTranscript: recordTranscript), userId)
    }

    /// Logs in as `userId` on node `index`.
    func session(_ userId: String, node index: Int, recordTranscript: Bool = false) throws -> RollcallConnection {
        try Self.logIn(try connect(node: index, recordTranscript: recordTranscript), userId)
    }

    /// The sum of a `/metrics` sample over the running nodes; nil when none has it.
    func metric(_ sample: String) throws -> Int? {
        let values = try lock.withLock { nodeProcesses }.filter(\.isRunning).compactMap { try $0.metric(sample) }
        return values.isEmpty ? nil : values.reduce(0, +)
    }

    /// How many sessions Redis holds (`ZCARD <prefix>{<g>}held`, summed over the key groups):
    /// white-box, for waiting until the cluster has declared a killed node dead and turned its
    /// sessions into holds (the `rollcall_cluster_nodes` gauge can drop a moment earlier). On
    /// a Redis Cluster (1024 groups) each master sums its `held` buckets, found with `KEYS`.
    func heldSessionsInRedis() -> Int? {
        switch store {
        case .server:
            guard let reply = try? RedisWire.command(port: redisPort, ["ZCARD", keyPrefix + "{0}held"]), reply.hasPrefix(":") else { return nil }
            return Int(reply.dropFirst())
        case .redisCluster(let nodes):
            guard let masters = try? nodes.masterPorts() else { return nil }
            let sum = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do n = n + redis.call('ZCARD', k) end return n"
            var total = 0
            for port in masters {
                guard let reply = try? RedisWire.command(port: port, ["EVAL", sum, "0", keyPrefix + "{*}held"]), reply.hasPrefix(":"),
                      let held = Int(reply.dropFirst()) else { return nil }
                total += held
            }
            return total
        }
    }

    /// Sends `signal` to node `index`; for SIGKILL and SIGTERM waits (up to 10 s) for the exit.
    func kill(node index: Int, signal: Int32 = SIGKILL) {
        let process = node(index)
        guard process.isRunning else { return }
        process.process.send(signal)
        if signal == SIGKILL || signal == SIGTERM { _ = process.process.waitForExit(timeout: 10) }
    }

    /// Kills node `index` if it still runs, then starts it again with the same id, config and
    /// port (nginx keeps pointing at it).
    func restart(node index: Int) throws {
        let old = node(index)
        old.kill()
        let fresh = try BrokerProcess(config: Self.nodeConfig(sharedConfig, index: index, redisPort: redisPortForNode?(index)), port: old.port)
        lock.withLock { nodeProcesses[index] = fresh }
    }

    /// Waits until every running node reports `rollcall_redis_connected 1` and
    /// `rollcall_cluster_nodes` equal to the number of running nodes.
    func waitUntilFormed(timeout: TimeInterval = 10) -> Bool {
        eventually(timeout: timeout) {
            let running = lock.withLock { nodeProcesses.filter(\.isRunning) }
            return running.allSatisfy { node in
                (try? node.metric("rollcall_redis_connected")) == 1
                    && (try? node.metric("rollcall_cluster_nodes")) == running.count
            }
        }
    }

    /// Every node's id, port, gauges and the last `logBytes` of its stderr, for failure messages.
    func describeNodes(logBytes: Int = 2000) -> String {
        lock.withLock { nodeProcesses }.enumerated().map { index, node in
            let gauges = node.isRunning
                ? "redis_connected=\((try? node.metric("rollcall_redis_connected")).flatMap { $0 }.map(String.init) ?? "?") "
                    + "cluster_nodes=\((try? node.metric("rollcall_cluster_nodes")).flatMap { $0 }.map(String.init) ?? "?")"
                : "not running"
            return "n\(index + 1) :\(node.port) \(gauges) stderr: \(node.stderrText.suffix(logBytes))"
        }.joined(separator: "\n")
    }

    /// Each node's whole stderr (the running process's), in node order.
    func nodeLogs() -> [String] {
        lock.withLock { nodeProcesses }.map(\.stderrText)
    }

    /// Kills the proxy, every node and its own redis-server (idempotent; also run when the
    /// value goes away). A Redis Cluster keeps running: its owner stops it.
    func stopAll() {
        proxy.stop()
        for node in lock.withLock({ nodeProcesses }) { node.kill() }
        if case .server(let server) = store { server.kill() }
    }

    deinit { stopAll() }

    /// `start` again (up to three tries) when it fails: a free port picked for Redis or nginx
    /// can be taken by another process (other suites run in parallel) before the server binds it.
    private static func retried<T>(_ start: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do { return try start() } catch where attempt < 3 { attempt += 1 }
        }
    }

    private static func logIn(_ connection: RollcallConnection, _ userId: String) throws -> RollcallConnection {
        let reply = try connection.login(userId: userId, platform: "cli")
        guard reply.ok else { throw HarnessError("login of \(userId) failed: \(reply)") }
        return connection
    }

    private static func nodeConfig(_ shared: [String: Any], index: Int, redisPort: Int?) -> [String: Any] {
        var cluster: [String: Any] = ["nodeId": "n\(index + 1)"]
        if let redisPort { cluster["redis"] = "redis://127.0.0.1:\(redisPort)" }
        return BrokerProcess.merge(shared, ["cluster": cluster])
    }

    /// Runs `start` for 0..<count on parallel threads; on any failure kills what did start.
    private static func startInParallel(count: Int, _ start: @escaping @Sendable (Int) throws -> BrokerProcess) throws -> [BrokerProcess] {
        let results = LockedResults(count: count)
        DispatchQueue.concurrentPerform(iterations: count) { index in
            results.set(index, Result { try start(index) })
        }
        let all = results.values
        let started = all.compactMap { try? $0.get() }
        if started.count < count {
            for node in started { node.kill() }
            let errors = all.compactMap { result -> String? in
                if case .failure(let error) = result { return "\(error)" }
                return nil
            }
            throw HarnessError("a cluster node did not start: \(errors.joined(separator: "\n"))")
        }
        return started
    }
}

/// Results of parallel starts, one slot per index.
private final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<BrokerProcess, Error>?]
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    func set(_ index: Int, _ result: Result<BrokerProcess, Error>) { lock.withLock { slots[index] = result } }
    var values: [Result<BrokerProcess, Error>] { lock.withLock { slots.compactMap { $0 } } }
}
