import Foundation
import RollcallProtocol
import RollcallTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What the chaos suite runs against: a ``ClusterProcess`` of three nodes whose Redis runs with
/// the append-only file, each node reaching Redis through its own ``LinkProxy``, the server API
/// on, and every node's webhooks going to one ``WebhookReceiver``. Injects the faults of a
/// ``ChaosSchedule`` and heals them all.
final class ChaosCluster: @unchecked Sendable {
    /// The short timings a schedule needs to run in seconds (PROTOCOL §9);
    /// `cluster.nodeTimeoutSeconds` is the run's (``ChaosOptions/nodeTimeoutSeconds``).
    struct Timings {
        static let heartbeatSeconds = 0.2
        static let presenceTimeoutSeconds = 1.0
        static let intervalSeconds = 0.2
    }

    static let webhookSecret = "chaos-webhook-secret"

    let cluster: ClusterProcess
    let proxies: [LinkProxy]
    /// The Redis Cluster the nodes share, on a run with `CHAOS_REDIS=cluster` (nil: one
    /// redis-server, ``ClusterProcess/redis``, each node through its proxy).
    let redisCluster: RedisClusterNodes?
    /// The Redis Cluster node a failover or a pause took down (``heal(_:)`` brings it back).
    private var downMaster: RedisServer?
    let receiver: WebhookReceiver
    /// True when channels may switch to interval mode (a low `presence.maxInstantEvents`).
    let intervalMode: Bool
    private let lock = NSLock()
    private var redisDown = false
    private var redisPaused = false
    private var pausedNodes: Set<Int> = []
    private var deadNodes: Set<Int> = []
    private var dataLosses = 0

    /// How many times a client was told the cluster lost its data (a close with 1012, PROTOCOL
    /// §9). The cluster starts empty then, user status included, so every client sets its
    /// custom status again, including one that had no connection when it happened.
    var dataLossesSeen: Int { lock.withLock { dataLosses } }

    /// A client's connection ended with "cluster data lost".
    func noteDataLoss() { lock.withLock { dataLosses += 1 } }

    /// Starts Redis (AOF on), the proxies, the receiver and three nodes, and waits until they
    /// formed a cluster.
    init(intervalMode: Bool, nodeTimeoutSeconds: Double, redis kind: ChaosRedis = .server) throws {
        self.intervalMode = intervalMode
        // As docs/cluster.md's recipe has it: a master takes writes only with a replica that
        // keeps up, so a failover loses no more than about a second of them.
        let redisCluster = kind == .cluster ? try RedisClusterNodes(masters: 3, replicasPerMaster: 1, writesNeedAReplica: true) : nil
        let redis = redisCluster == nil ? try RedisServer(appendOnly: true) : nil
        let proxies = try redis.map { redis in try (0..<3).map { _ in try LinkProxy(targetPort: redis.port) } } ?? []
        let receiver = try WebhookReceiver()
        let ports = proxies.map(\.port)
        let config: [String: Any] = BrokerProcess.merge(ServerAPIRequest.config, [
            "cluster": ["heartbeatSeconds": Timings.heartbeatSeconds, "nodeTimeoutSeconds": nodeTimeoutSeconds],
            "presence": [
                "timeoutSeconds": Timings.presenceTimeoutSeconds, "intervalSeconds": Timings.intervalSeconds,
                "maxInstantEvents": intervalMode ? 5 : 50, "hysteresis": intervalMode ? 2 : 10,
            ],
            "userStatus": ["customStatusPerSecond": 50],
            "webhooks": [
                "url": receiver.url, "secret": Self.webhookSecret, "batchMaxDelaySeconds": 0.05,
                "retryMaxSeconds": 600,
            ],
        ])
        do {
            var portForNode: (@Sendable (Int) -> Int)?
            if !ports.isEmpty { portForNode = { @Sendable index in ports[index] } }
            cluster = try ClusterProcess(config: config, formTimeout: 20, redis: redis, redisPortForNode: portForNode,
                                         redisCluster: redisCluster)
        } catch {
            for proxy in proxies { proxy.stop() }
            receiver.stop()
            redis?.kill()
            throw error
        }
        self.proxies = proxies
        self.receiver = receiver
        self.redisCluster = redisCluster
    }

    /// The port of the Redis that holds the cluster's keys now: the redis-server, or the
    /// Redis Cluster master serving the slot of the keys' group (``ClusterProcess/redisPort``).
    var keysRedisPort: Int { cluster.redisPort }

    /// The Redis a Redis fault aims at: the redis-server, or the Redis Cluster master at place
    /// `fault.master` among the masters' ports in order now (the control slot's without one).
    private func master(for fault: Fault) throws -> RedisServer {
        guard let redisCluster else { return cluster.redis }
        let port: Int
        if let index = fault.master {
            let ports = try redisCluster.masterPorts()
            guard !ports.isEmpty else { throw HarnessError("the Redis Cluster has no master with slots") }
            port = ports[index % ports.count]
        } else {
            port = try redisCluster.masterPort(servingKey: cluster.keyPrefix + "{0}")
        }
        guard let node = redisCluster.node(port: port) else { throw HarnessError("no Redis Cluster node on port \(port)") }
        return node
    }

    /// `ws://127.0.0.1:PORT/v1` of node `index`.
    func nodeURL(_ index: Int) -> String { cluster.nodeURL(index) }

    /// The HTTP port of node `index` (for the server API).
    func nodePort(_ index: Int) -> Int { cluster.node(index).port }

    /// Applies `fault` (``heal(_:)`` undoes it).
    func inject(_ fault: Fault) throws {
        switch fault.kind {
        case .killNode:
            let node = fault.node!
            cluster.kill(node: node, signal: SIGKILL)
            lock.withLock { _ = deadNodes.insert(node) }
        case .pauseNode:
            let node = fault.node!
            cluster.kill(node: node, signal: SIGSTOP)
            lock.withLock { _ = pausedNodes.insert(node) }
        case .cutLink:
            proxies[fault.node!].cut()
        case .freezeLink:
            proxies[fault.node!].freeze()
        case .restartRedis:
            lock.withLock { redisDown = true }
            // With `appendonly yes` SHUTDOWN writes and syncs the file first; the connection
            // ends without a reply.
            _ = try? RedisWire.command(port: cluster.redisPort, ["SHUTDOWN"], timeout: 5)
            _ = eventually(timeout: 10) { cluster.redis.pid == nil }
        case .pauseRedis:
            let master = try master(for: fault)
            master.suspend()
            lock.withLock {
                redisPaused = true
                downMaster = master
            }
        case .failoverRedis:
            let master = try master(for: fault)
            master.kill()
            lock.withLock { downMaster = master }
        }
    }

    /// Undoes `fault`.
    func heal(_ fault: Fault) throws {
        switch fault.kind {
        case .killNode:
            try restartNode(fault.node!)
        case .pauseNode:
            cluster.kill(node: fault.node!, signal: SIGCONT)
            lock.withLock { _ = pausedNodes.remove(fault.node!) }
        case .cutLink, .freezeLink:
            proxies[fault.node!].restore()
        case .restartRedis:
            try startRedisAgain()
        case .pauseRedis:
            let master = lock.withLock { downMaster } ?? cluster.redis
            master.resume()
            lock.withLock {
                redisPaused = false
                downMaster = nil
            }
            try waitUntilRedisClusterHealthy()
        case .failoverRedis:
            try startDownMasterAgain()
        }
    }

    /// A killed Redis Cluster master starts again on its port with its `nodes.conf`: it comes
    /// back as a replica of the one promoted meanwhile.
    ///
    /// Not before its replica was promoted (session 46): the bed runs without persistence, so
    /// a master killed and started again within `cluster-node-timeout` came back empty and
    /// still master of its slots, and its replica synced the empty set — a loss of a third of
    /// the keys, not the failover this fault stands for (seeds 161356634423154,
    /// 39620691428767, 169295661603920: "cluster data lost", then resumes into what the other
    /// masters kept). A deployment runs its masters with `appendonly yes`.
    private func startDownMasterAgain() throws {
        guard let master = lock.withLock({ downMaster }), let redisCluster else { return }
        // Not before a replica serves its slots: `masterPorts()` leaves out a master as soon as
        // one node suspects it (`fail?`), and one started again then kept its slots, empty
        // (session 47: the "cluster data lost" and lost custom statuses of some seeds).
        _ = redisCluster.waitUntilPromoted(replacing: master.port, masters: 3, timeout: 15)
        try master.restart(timeout: 20)
        lock.withLock { downMaster = nil }
        try waitUntilRedisClusterHealthy()
    }

    /// On a Redis Cluster: waits until every node agrees again (a failover done, the old master
    /// a replica in sync).
    private func waitUntilRedisClusterHealthy() throws {
        try redisCluster?.waitUntilHealthy(timeout: 30)
    }

    /// Undoes every fault still in force (a schedule cut short, a failed heal).
    func healEverything() throws {
        for proxy in proxies { proxy.restore() }
        let (paused, dead, down, redisStopped) = lock.withLock { (pausedNodes, deadNodes, redisDown, redisPaused) }
        if redisStopped {
            (lock.withLock { downMaster } ?? cluster.redis).resume()
            lock.withLock {
                redisPaused = false
                downMaster = nil
            }
        }
        try startDownMasterAgain()
        try waitUntilRedisClusterHealthy()
        if down { try startRedisAgain() }
        for node in paused {
            cluster.kill(node: node, signal: SIGCONT)
            lock.withLock { _ = pausedNodes.remove(node) }
        }
        for node in dead { try restartNode(node) }
    }

    /// Every node's gauges and the last `logBytes` of its stderr (for a report).
    func describe(logBytes: Int) -> String { cluster.describeNodes(logBytes: logBytes) }

    /// Kills everything.
    func stop() {
        cluster.stopAll()
        for proxy in proxies { proxy.stop() }
        receiver.stop()
    }

    deinit { stop() }

    private func restartNode(_ node: Int) throws {
        // The port was just freed by the killed process; retry briefly if it is not free yet.
        var lastError: Error?
        let started = eventually(timeout: 10) {
            do {
                try cluster.restart(node: node)
                return true
            } catch {
                lastError = error
                return false
            }
        }
        guard started else { throw HarnessError("node n\(node + 1) did not start again: \(lastError.map { "\($0)" } ?? "?")") }
        lock.withLock { _ = deadNodes.remove(node) }
    }

    private func startRedisAgain() throws {
        try cluster.redis.startAgainAfterShutdown(timeout: 20)
        lock.withLock { redisDown = false }
    }
}
