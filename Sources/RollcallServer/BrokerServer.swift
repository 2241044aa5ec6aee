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

    // MARK: Owned by the service thread
    let broker: Broker
    let logger: Logger
    var context: OpaquePointer?
    /// Open WebSocket connections and their heartbeat checks.
    var records = ConnectionTable()
    var nextKey: UInt64 = 0
    var httpExchanges: [UInt64: HTTPExchange] = [:]
    /// Server API requests handed to the core and not yet answered, by request id.
    var apiExchanges: [APIRequestID: PendingAPIExchange] = [:]
    var nextAPIRequestNumber: UInt64 = 0
    /// The server API's bearer keys (PROTOCOL §10).
    let apiKeys: ServerAPIKeys
    lazy var router = makeRouter()
    var healthCheck = HealthCheck()
    /// `/metrics` and the histograms (one registry per server).
    let exposition = MetricsExposition()
    var pendingEvents: [InboundEvent] = []
    var isFeeding = false
    /// The connection whose message the core is handling (during `feed` of `.received`): while
    /// busy it is not held for the coalescing window but written at the end of the loop turn,
    /// because it is waiting for the reply (``WriteCoalescer/writeAtEndOfTurn(_:)``).
    var requester: ConnectionID?
    var metrics = TransportMetrics()
    var phase = Phase.accepting
    var armedTimerAt: Int64?
    /// Returns freed heap pages to the kernel after bursts (see ``HeapTrimmer``).
    var heapTrimmer = HeapTrimmer()
    /// The epoll loop lws runs on (see ``EventLoop``); nil: lws' poll loop (`ROLLCALL_EVENT_LOOP=poll`,
    /// or libev could not be loaded).
    var eventLoop: EventLoop?
    /// Holds a busy connection's events for the loop's flush so they share a frame (nil on
    /// lws' poll loop: every event asks for a writable callback at once).
    var coalescer: WriteCoalescer?
    /// Quiet connections that got output during the current `feed`: written directly once the
    /// whole action list is applied (``BrokerServer/writeDirectly(_:)``).
    var directWrites: [ConnectionRecord] = []
    /// Sends a broadcast's frames to quiet connections in one io_uring submission (nil:
    /// `http.batchedSends` false, TLS, no io_uring here, or the ring failed; then one
    /// `lws_write` each).
    var batchedSends: BatchedSends?
    /// The first pass's written connections (`writeDirectWrites`), kept for its capacity.
    var sentAloneScratch: [ConnectionRecord] = []
    /// Connections that offered permessage-deflate while it is on: never written outside lws'
    /// writable callback (the extension drains its output from there). A set beside the
    /// records, not a flag in ``ConnectionRecord``: a flag would take the record from 104 to
    /// 105 bytes, a 128-byte malloc chunk instead of 112 (16 bytes per session), while the set
    /// costs one hash lookup per direct write, and only while some connection compresses.
    var compressingConnections = Set<ConnectionID>()
    /// Every accepted socket (lws `WSI_CREATE` … `WSI_DESTROY`), in any phase: the connection cap counts these.
    var openSockets = Set<OpaquePointer>()
    /// Connections sending a static file (each holds the file's descriptor too).
    var fileTransfers = Set<OpaquePointer>()
    /// Kept-alive HTTP connections: how many bytes lws had read from the socket when their last
    /// transaction completed (``BrokerServer/completeTransaction(_:)``), to tell a pipelined
    /// request from a later one.
    var keptAliveReads: [OpaquePointer: Int64] = [:]
    /// The connection cap, set when the context is created (see ``ConnectionCap``).
    var connectionCap = ConnectionCap(descriptorLimit: 1024)
    /// True while new connections are being refused (for one log line per episode).
    var refusingConnections = false
    let staticFiles: StaticFiles
    /// The operator's console (`http.adminDir`), served under ``AdminConsoleRoute/path``.
    let adminFiles: StaticFiles
    /// Posts webhook batches (PROTOCOL §11); nil while `webhooks.url` is null.
    var webhookSender: WebhookSender?
    /// Shutdown: the moment (monotonic ms) waiting webhook batches stop being waited for.
    var webhookDrainDeadline: Int64?
    /// *(1.2)* `auth.jwksFile` and `auth.jwksUrl` (jwt mode): nil when neither is set.
    var keySets: KeySetService?
    /// Signalled once by the service thread when the first fetch of `auth.jwksUrl` is over.
    let keySetStarted = DispatchSemaphore(value: 0)
    /// Why the first fetch of `auth.jwksUrl` cannot start the broker (set before ``keySetStarted``).
    var keySetStartError: ServerError?
    /// The node id webhook batches carry as `node`.
    public let nodeId: String
    /// Where `webhooks.secretEnv` is read.
    let environment: [String: String]
    let writer: WriteBuffer
    let heartbeat: HeartbeatPolicy
    /// Cluster mode: the link to Redis on this thread's loop (nil on one node).
    var clusterLink: ClusterLink?
    /// The cluster's epoch when this node joined (from ``ClusterStartCheck``).
    public let clusterEpoch: String?

    // MARK: Shared with C and other threads
    let timer: UnsafeMutablePointer<rollcall_timer_t>
    let stopFlag: UnsafeMutablePointer<rollcall_stop_flag_t>
    private let lifecycle = NSLock()
    private var started = false
    private var contextForStopRequests: OpaquePointer?
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled once by the service thread when the cluster link is first connected.
    private let clusterConnected = DispatchSemaphore(value: 0)
    /// The service thread's side of ``clusterConnected``: already signalled.
    private var clusterConnectedSignalled = false
    var cStrings: [UnsafeMutablePointer<CChar>] = []
    var protocols: UnsafeMutablePointer<lws_protocols>?
    /// lws' idle ("validity") policy for the vhost: all zero, so lws keeps no per-connection
    /// validity timer (the transport owns heartbeats, see `BrokerServer+Timers.swift`).
    var idlePolicy: UnsafeMutablePointer<lws_retry_bo_t>?

    /// Where the server is in its life.
    enum Phase: Equatable {
        /// Serving; `/healthz` answers 200.
        case accepting
        /// Shutdown requested: close frames sent, waiting for connections to go until `deadline`
        /// (monotonic ms). Upgrades are refused, `/healthz` answers 503.
        case draining(deadline: Int64)
        /// The service loop is over; the context is being destroyed.
        case stopped
    }

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
        self.apiKeys = ServerAPIKeys(configuration.api, environment: environment)
        self.logger = logger
        // One node: "standalone" (webhook batches carry it); a cluster node: its id.
        let nodeId = nodeId ?? configuration.cluster.nodeId
            ?? (configuration.cluster.isEnabled ? BrokerServer.randomNodeId() : "standalone")
        self.nodeId = nodeId
        self.environment = environment
        self.broker = Broker(configuration: configuration, store: store, authenticator: authenticator, nodeId: nodeId,
                             engines: configuration.cluster.isEnabled ? BrokerEngines.onRedis : BrokerEngines.inMemory)
        self.staticFiles = StaticFiles(directory: configuration.http.staticDir)
        self.adminFiles = StaticFiles(directory: configuration.http.adminDir)
        self.writer = WriteBuffer(initialCapacity: max(1024, configuration.limits.maxBatchBytes))
        self.heartbeat = HeartbeatPolicy(
            intervalSeconds: configuration.heartbeat.intervalSeconds, timeoutSeconds: configuration.heartbeat.timeoutSeconds)
        timer = .allocate(capacity: 1)
        timer.initialize(to: rollcall_timer_t())
        stopFlag = .allocate(capacity: 1)
        stopFlag.initialize(to: rollcall_stop_flag_t())
        broker.instrumentation = exposition.histograms
        healthCheck.add { [broker] in Self.storageFailure(broker.storageHealth) }
        healthCheck.add { [unowned self] in clusterLink?.healthProblem }
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

    deinit {
        timer.deallocate()
        stopFlag.deallocate()
        for string in cStrings { free(string) }
        protocols?.deallocate()
        idlePolicy?.deallocate()
    }

    /// Adds a `/healthz` probe (storage, cluster link, …): while it returns a reason, `/healthz`
    /// answers 503 with it. Call before ``start()``; the probe runs on the service thread.
    public func addHealthProbe(_ probe: @escaping HealthCheck.Probe) {
        healthCheck.add(probe)
    }

    /// Creates the lws context on a new service thread and starts serving. Returns the bound
    /// port once the socket listens (in cluster mode, once the Redis links are connected too,
    /// waiting at most `cluster.nodeTimeoutSeconds`; with `auth.jwksUrl`, once its key set was
    /// fetched); throws ``ServerError`` if it cannot listen or the key set cannot be had.
    @discardableResult
    public func start() throws(ServerError) -> Int {
        let port = try startServiceThread()
        // Outside the lifecycle lock: a key set that cannot be fetched stops the loop, which
        // takes that lock as it ends.
        try waitForTheKeySet()
        lifecycle.lock()
        defer { lifecycle.unlock() }
        waitForTheClusterLink()
        return port
    }

    /// The part of ``start()`` that creates the context on the service thread: the bound port.
    private func startServiceThread() throws(ServerError) -> Int {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        guard !started else { throw ServerError(.alreadyStarted, "the server was already started") }
        started = true
        try TLSFiles.check(configuration.tls)
        LWSLogBridge.install(level: Logger.Level(rawValue: configuration.log.level) ?? .info)

        let ready = DispatchSemaphore(value: 0)
        let outcome = StartOutcome()
        let thread = Thread { [self] in
            outcome.result = createContext()
            if case .success = outcome.result {
                contextForStopRequests = context
                ready.signal()
                serviceLoop()
            } else {
                ready.signal()
            }
            finished.signal()
        }
        thread.name = "rollcall-service"
        thread.start()
        ready.wait()
        let port = try outcome.result.get()
        self.port = port
        return port
    }

    /// jwt mode with `auth.jwksUrl`: waits for the first fetch of the key set (at most
    /// ``JWKSFetcher/fetchTimeoutMs``), so that the broker does not announce itself while it
    /// would refuse every RS256, ES256 and EdDSA login. When the fetch failed, the service loop
    /// is stopped and the error, naming `auth.jwksUrl`, is thrown (PROTOCOL §3: the broker does
    /// not start).
    private func waitForTheKeySet() throws(ServerError) {
        guard configuration.auth.mode == .jwt, configuration.auth.jwksUrl != nil else { return }
        keySetStarted.wait()
        guard let error = keySetStartError else { return }
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
        if clusterConnected.wait(timeout: .now() + bound) == .timedOut {
            logger.warning("cluster: Redis not connected yet; requests that need it are answered UNAVAILABLE until it is",
                           metadata: ["waitedSeconds": "\(bound)"])
        }
    }

    /// Blocks until the service loop has ended and the context is destroyed.
    public func wait() {
        finished.wait()
        finished.signal()
    }

    /// Asks for a graceful shutdown (close 1001 to everyone, then stop). Thread-safe; returns at once.
    public func requestStop() {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        rollcall_request_stop(contextForStopRequests, stopFlag)
    }

    /// Makes SIGINT and SIGTERM request a graceful shutdown of this server (and ignores SIGPIPE).
    /// The handlers only set a flag and wake the service loop.
    public func installSignalHandlers() {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        rollcall_install_stop_signals(contextForStopRequests, stopFlag)
    }

    /// Hands the service thread's start result to `start()` (ordered by the semaphore).
    private final class StartOutcome: @unchecked Sendable {
        var result: Result<Int, ServerError> = .failure(ServerError(.listenFailed, "not started"))
    }

    // MARK: - Service loop

    private func serviceLoop() {
        while true {
            if phase == .accepting, rollcall_stop_requested(stopFlag) != 0 {
                beginShutdown()
            }
            if case .draining(let deadline) = phase,
               (records.isEmpty && !broker.awaitsStore) || MonotonicClock.now >= deadline,
               webhooksSettled(now: MonotonicClock.now) {
                break
            }
            if let eventLoop {
                eventLoop.runOnce()
                coalescer?.endTurn()
                if !clusterConnectedSignalled, clusterLink?.isConnected == true {
                    clusterConnectedSignalled = true
                    clusterConnected.signal()
                }
            } else if lws_service(context, 0) < 0 {
                break
            }
            heapTrimmer.maybeTrim(now: MonotonicClock.now, bytesOut: metrics.bytesOut,
                                  connectionsTotal: metrics.connectionsTotal, open: openSockets.count)
        }
        logger.info("stopped", metadata: ["connectionsLeft": "\(records.count)"])
        phase = .stopped
        lifecycle.lock()
        rollcall_install_stop_signals(nil, nil)
        contextForStopRequests = nil
        lifecycle.unlock()
        clusterLink?.close()
        clusterLink = nil
        coalescer?.stop()
        coalescer = nil
        lws_sul_cancel(&timer.pointee.sul)
        if let webhookSender, !webhookSender.isIdle {
            logger.warning("webhook batches left unsent at exit", metadata: ["waitingEvents": "\(webhookSender.waitingEvents)"])
        }
        webhookSender?.stop()
        keySets?.stop()
        lws_context_destroy(context)
        context = nil
        eventLoop?.destroy()
        eventLoop = nil
        records.removeAll()
    }

    /// Ends every session (the core answers with close 1001 for each connection), closes
    /// anything the core did not, and lets the loop wait up to ``shutdownGraceMs``.
    func beginShutdown() {
        guard phase == .accepting else { return }
        logger.info("shutting down", metadata: ["connections": "\(records.count)"])
        phase = .draining(deadline: MonotonicClock.now + Self.shutdownGraceMs)
        feed(.shutdown)
        if let webhookSender {
            webhookDrainDeadline = MonotonicClock.now + Self.webhookShutdownGraceMs
            webhookSender.drain()
        }
        for record in records.all {
            perform(record.lifecycle.shutdown(), for: record)
        }
        armTimer()
    }
}
