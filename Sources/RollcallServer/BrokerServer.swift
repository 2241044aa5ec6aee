import CRollcallShim
import Foundation
import Logging
import RollcallCore
import RollcallProtocol
import RollcallEventLoop
import RollcallRedisEngine

/// The libwebsockets transport: one lws context serviced by one dedicated thread that owns
/// the ``Broker`` outright (no locks on the hot path).
///
/// The thread feeds the broker ``InboundEvent``s and carries out the ``Action``s it returns:
/// WebSocket `/v1` (alias `/ws`, subprotocol `rollcall.v1` optional), and HTTP on the same
/// port (`/healthz`, `/metrics`, static files). See `docs/transport.md`.
///
/// ```swift
/// let server = BrokerServer(configuration: configuration)
/// let port = try server.start()        // listening once this returns
/// server.installSignalHandlers()      // SIGINT/SIGTERM → graceful stop
/// server.wait()                       // returns after the shutdown completed
/// ```
public final class BrokerServer {
    /// The configuration the server runs with.
    public let configuration: Configuration
    /// The TCP port actually bound (meaningful once ``start()`` returned; `listen.port` 0 picks one).
    public private(set) var port: Int = 0

    /// The node id webhook batches carry as `node`.
    public let nodeId: String
    /// The cluster's epoch when this node joined (from ``ClusterStartCheck``).
    public let clusterEpoch: String?

    // MARK: Parts, owned by the service thread (``lifecycle`` excepted)
    let broker: Broker
    let logger: Logger
    /// Open WebSocket connections and their heartbeat checks.
    var records = ConnectionTable()
    /// What the transport is feeding the core (``feed(_:)``).
    var feeding = CoreFeed()
    /// The transport's counters for `/metrics`.
    var metrics = TransportMetrics()
    /// The WebSocket writer's state: buffer, coalescer, direct and batched sends.
    var output: WebSocketOutput
    /// HTTP: routes, exchanges, health, `/metrics`, API keys, files.
    var http: HTTPFrontEnd
    /// The connection cap.
    var gate: ConnectionGate
    /// The cluster link, the webhook sender and the key sets.
    var services: LoopServices
    /// The lws context, its loop, phase and timer.
    var loop: ServiceLoop
    /// Threads, signals and semaphores: the part other threads touch.
    let lifecycle = ServerLifecycle()

    /// Kernel send buffer cap per connection, so a stalled reader is noticed in the broker's
    /// own (bounded) outbound queue rather than in megabytes of kernel buffer.
    static let socketSendBufferBytes: Int32 = 64 * 1024
    /// lws receive chunk size; messages are reassembled up to `limits.maxFrameBytes` by the transport.
    /// lws allocates this much per WebSocket connection (`rx_ubuf`, plus `LWS_PRE` and 4 bytes),
    /// for its whole life, so it is kept small: 1024 measured ~3.0 KB RSS per idle logged-in
    /// session against ~6.0 KB with 4096 (debug build, 2000 sessions); heaptrack: 1094 B per
    /// `rx_ubuf` at 1024. At 128, pipelined 512-byte requests lost their reply batching (the
    /// `maxBatchBytes` integration test); at 256 a pipelining publisher had fewer requests read
    /// per loop turn, so fewer events shared a frame (fan-out: 97k deliveries/s at 8.6 µs each,
    /// against 191k-263k/s at 3.2-4.6 µs with 512). Control frames (≤ 125 bytes) always fit.
    static let receiveChunkBytes = 512
    /// How long shutdown waits for connections to go before destroying the context.
    static let shutdownGraceMs: Int64 = 1000
    /// How long shutdown waits for waiting webhook batches (PROTOCOL §11 gives them up to 5 s;
    /// the rest of the 5 s exit budget of §5 is for destroying the context and the store).
    static let webhookShutdownGraceMs: Int64 = 4500

    /// A server for `configuration`, with the durable `store` and an optional authenticator
    /// (nil: the core's default for `auth.mode`). Nothing is bound until ``start()``.
    ///
    /// `nodeId` is the `node` of webhook batches (a single node is `standalone`);
    /// `environment` is where `webhooks.secretEnv` is looked up.
    /// The server API's keys are `api.keys` and the variable `api.keyEnv` names in
    /// `environment` (default: the process environment).
    public init(
        configuration: Configuration,
        store: any StatusStore = MemoryStatusStore(),
        authenticator: (any LoginAuthenticator)? = nil,
        logger: Logger = Logger(label: "rollcall"),
        nodeId: String? = nil,
        clusterEpoch: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) {
        self.clusterEpoch = clusterEpoch
        self.configuration = configuration
        self.logger = logger
        // One node: "standalone" (webhook batches carry it); a cluster node: its id.
        let nodeId = nodeId ?? configuration.cluster.nodeId
            ?? (configuration.cluster.isEnabled ? BrokerServer.randomNodeId() : "standalone")
        self.nodeId = nodeId
        self.broker = Broker(configuration: configuration, store: store, authenticator: authenticator, nodeId: nodeId,
                             engines: configuration.cluster.isEnabled ? BrokerEngines.onRedis : BrokerEngines.inMemory)
        http = HTTPFrontEnd(configuration: configuration, environment: environment)
        output = WebSocketOutput(limits: configuration.limits, histograms: http.exposition.histograms)
        gate = ConnectionGate(logger: logger)
        services = LoopServices(environment: environment)
        loop = ServiceLoop(heartbeat: HeartbeatPolicy(
            intervalSeconds: configuration.heartbeat.intervalSeconds, timeoutSeconds: configuration.heartbeat.timeoutSeconds))
        broker.instrumentation = http.exposition.histograms
        http.router = makeRouter()
        http.healthCheck.add { [broker] in Self.storageFailure(broker.storageHealth) }
        http.healthCheck.add { [unowned self] in services.clusterLink?.healthProblem }
    }

    /// A new random node id (`cluster.nodeId` null): 12 lowercase hex digits.
    public static func randomNodeId() -> String {
        String(UInt64.random(in: 0...0xFFFF_FFFF_FFFF), radix: 16)
    }

    /// The `/healthz` reason while durable writes fail (nil while they succeed).
    static func storageFailure(_ health: StorageHealth) -> String? {
        guard let failure = health.failure else { return nil }
        return "storage: durable writes failing (\(health.writeFailures) failed commits, "
            + "\(health.pendingWrites) changes waiting, \(health.droppedWrites) dropped): \(failure.message)"
    }

    /// Adds a `/healthz` probe (storage, cluster link, …): while it returns a reason, `/healthz`
    /// answers 503 with it. Call before ``start()``; the probe runs on the service thread.
    public func addHealthProbe(_ probe: @escaping HealthCheck.Probe) {
        http.healthCheck.add(probe)
    }

    /// Creates the lws context on a new service thread and starts serving. Returns the bound
    /// port once the socket listens (in cluster mode, once the Redis links are connected too,
    /// waiting at most `cluster.nodeTimeoutSeconds`; with `auth.jwksUrl`, once its key set was
    /// fetched); throws ``ServerError`` if it cannot listen or the key set cannot be had.
    @discardableResult
    public func start() throws(ServerError) -> Int {
        let port = try lifecycle.startServiceThread(
            prepare: { [configuration] () throws(ServerError) in
                try TLSFiles.check(configuration.tls)
                LWSLogBridge.install(level: Logger.Level(rawValue: configuration.log.level) ?? .info)
            },
            create: { [self] in (createContext(), loop.context) },
            serve: { [self] in serviceLoop() })
        self.port = port
        // Outside the lifecycle lock: a key set that cannot be fetched stops the loop, which
        // takes that lock as it ends.
        try waitForTheKeySet()
        lifecycle.locked { waitForTheClusterLink() }
        return port
    }

    /// jwt mode with `auth.jwksUrl`: waits for the first fetch of the key set (at most
    /// ``JWKSFetcher/fetchTimeoutMs``), so that the broker does not announce itself while it
    /// would refuse every RS256, ES256 and EdDSA login. When the fetch failed, the service loop
    /// is stopped and the error, naming `auth.jwksUrl`, is thrown (PROTOCOL §3: the broker does
    /// not start).
    private func waitForTheKeySet() throws(ServerError) {
        guard configuration.auth.mode == .jwt, configuration.auth.jwksUrl != nil else { return }
        guard let error = lifecycle.waitForKeySet() else { return }
        requestStop()
        wait()
        throw error
    }

    /// Cluster mode: waits until the node's Redis links are connected (the start check has
    /// just reached Redis, so this takes a loop turn or two), at most `nodeTimeoutSeconds`, so
    /// that the node is not announced (`listening on`) while every request that needs Redis
    /// would be answered `UNAVAILABLE`. Past the bound it starts anyway and says so; `/healthz`
    /// answers 503 until the links are up.
    private func waitForTheClusterLink() {
        guard configuration.cluster.isEnabled else { return }
        let bound = max(1, configuration.cluster.nodeTimeoutSeconds)
        if !lifecycle.waitForClusterLink(seconds: Double(bound)) {
            logger.warning("cluster: Redis not connected yet; requests that need it are answered UNAVAILABLE until it is",
                           metadata: ["waitedSeconds": "\(bound)"])
        }
    }

    /// Blocks until the service loop has ended and the context is destroyed.
    public func wait() {
        lifecycle.wait()
    }

    /// Asks for a graceful shutdown (close 1001 to everyone, then stop). Thread-safe; returns at once.
    public func requestStop() {
        lifecycle.requestStop()
    }

    /// Makes SIGINT and SIGTERM request a graceful shutdown of this server (and ignores SIGPIPE).
    /// The handlers only set a flag and wake the service loop.
    public func installSignalHandlers() {
        lifecycle.installSignalHandlers()
    }

    // MARK: - Service loop

    private func serviceLoop() {
        while true {
            if loop.phase == .accepting, lifecycle.stopRequested {
                beginShutdown()
            }
            if let deadline = loop.drainDeadline,
               (records.isEmpty && !broker.awaitsStore) || MonotonicClock.now >= deadline,
               services.webhooksSettled(now: MonotonicClock.now) {
                break
            }
            if let eventLoop = loop.eventLoop {
                eventLoop.runOnce()
                output.coalescer?.endTurn()
                if services.clusterLink?.isConnected == true { lifecycle.clusterLinkConnected() }
            } else if lws_service(loop.context, 0) < 0 {
                break
            }
            loop.heapTrimmer.maybeTrim(now: MonotonicClock.now, bytesOut: metrics.bytesOut,
                                       connectionsTotal: metrics.connectionsTotal, open: gate.openSockets.count)
        }
        logger.info("stopped", metadata: ["connectionsLeft": "\(records.count)"])
        loop.phase = .stopped
        lifecycle.serviceLoopEnded()
        services.clusterLink?.close()
        services.clusterLink = nil
        output.coalescer?.stop()
        output.coalescer = nil
        loop.timer.detach()
        if let webhookSender = services.webhookSender, !webhookSender.isIdle {
            logger.warning("webhook batches left unsent at exit", metadata: ["waitingEvents": "\(webhookSender.waitingEvents)"])
        }
        services.webhookSender?.stop()
        services.keySets?.stop()
        lws_context_destroy(loop.context)
        loop.context = nil
        loop.eventLoop?.destroy()
        loop.eventLoop = nil
        records.removeAll()
    }

    /// Ends every session (the core answers with close 1001 for each connection), closes
    /// anything the core did not, and lets the loop wait up to ``shutdownGraceMs``.
    func beginShutdown() {
        guard loop.phase == .accepting else { return }
        logger.info("shutting down", metadata: ["connections": "\(records.count)"])
        loop.phase = .draining(deadline: MonotonicClock.now + Self.shutdownGraceMs)
        feed(.shutdown)
        if let webhookSender = services.webhookSender {
            services.webhookDrainDeadline = MonotonicClock.now + Self.webhookShutdownGraceMs
            webhookSender.drain()
        }
        for record in records.all {
            perform(record.lifecycle.shutdown(), for: record)
        }
        armTimer()
    }
}
