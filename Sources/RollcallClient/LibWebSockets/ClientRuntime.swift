// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
import CLibWebSockets
import CRollcallShim
import DequeModule
import Foundation
import RollcallEventLoop

/// One libwebsockets client context serviced by its own thread; it hosts any number of
/// ``RollcallConnection``s.
///
/// libwebsockets is not thread-safe: every call into it happens on the service thread.
/// Other threads hand work over through a locked queue and wake the thread with
/// `lws_cancel_service`, which lws reports as `LWS_CALLBACK_EVENT_WAIT_CANCELLED`.
public final class ClientRuntime: @unchecked Sendable {
    /// How a runtime is sized.
    public struct Options: Sendable {
        /// The most connections this runtime will hold at once (sizes lws's fd table and
        /// raises the process's open-file limit when needed).
        public var maxConnections: Int
        /// Per-connection receive chunk size; larger messages arrive in pieces and are
        /// reassembled, so a small value saves memory with many connections.
        public var rxBufferSize: Int
        /// libwebsockets log level bit mask (`LLL_ERR` = 1, `LLL_WARN` = 2, …); 0 is silent.
        public var lwsLogLevel: Int32
        /// At most this many WebSocket handshakes run at once; further connections wait
        /// their turn (thousands of simultaneous SYNs overflow a listener's backlog).
        public var maxConcurrentHandshakes: Int
        /// Run lws on libev's epoll loop instead of its own `poll()` loop, so a wake-up costs
        /// the ready sockets rather than every socket held (load generators with thousands of
        /// connections; falls back to the poll loop when libev cannot be loaded).
        public var epoll: Bool

        /// Options for a runtime of `maxConnections` connections.
        public init(maxConnections: Int = 1024, rxBufferSize: Int = 4096, lwsLogLevel: Int32 = 0,
                    maxConcurrentHandshakes: Int = 256, epoll: Bool = false) {
            self.epoll = epoll
            self.maxConnections = maxConnections
            self.rxBufferSize = rxBufferSize
            self.lwsLogLevel = lwsLogLevel
            self.maxConcurrentHandshakes = max(1, maxConcurrentHandshakes)
        }
    }

    /// A process-wide runtime for tools and tests (1024 connections), created on first use.
    public static let shared: ClientRuntime = {
        do { return try ClientRuntime() } catch { fatalError("cannot start the client runtime: \(error)") }
    }()

    /// The options the runtime was created with.
    public let options: Options

    private let lock = NSLock()
    private var commands: [() -> Void] = []
    private var writeRequests: [RollcallConnection] = []
    private var wakePending = false
    private var stopping = false
    private var serviceEnded = false
    private let finished = DispatchSemaphore(value: 0)

    /// Service-thread state.
    private(set) var context: OpaquePointer?
    private var waitingToConnect = Deque<RollcallConnection>()
    private var handshakesInProgress = 0
    private var pumpingConnects = false
    private let protocols: UnsafeMutablePointer<lws_protocols>
    /// The epoll loop when ``Options/epoll`` is set and libev could be loaded.
    private var eventLoop: EventLoop?
    let protocolName: UnsafeMutablePointer<CChar>

    /// Creates the lws context and starts its service thread.
    public init(options: Options = Options()) throws(ClientError) {
        self.options = options
        rollcall_client_ignore_sigpipe()
        _ = rollcall_client_raise_fd_limit(UInt(options.maxConnections + 64))
        lws_set_log_level(options.lwsLogLevel, nil)

        protocolName = strdup("rollcall-client")
        protocols = .allocate(capacity: 2)
        var proto = lws_protocols()
        proto.name = UnsafePointer(protocolName)
        proto.callback = rollcallClientCallback
        proto.per_session_data_size = 0
        proto.rx_buffer_size = options.rxBufferSize
        proto.tx_packet_size = 0
        protocols.initialize(to: proto)
        (protocols + 1).initialize(to: lws_protocols())

        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.count_threads = 1
        info.fd_limit_per_thread = UInt32(options.maxConnections + 64)
        info.options = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT | LWS_SERVER_OPTION_JUST_USE_RAW_ORIGIN)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        // permessage-deflate for connections that ask (``RollcallConnection/permessageDeflate``);
        // the list is static C data, as lws keeps the pointer and walks it on every handshake.
        info.extensions = rollcall_client_extensions()
        let creation = EventLoop.createContext(info, onLibev: options.epoll)
        eventLoop = creation.loop
        guard let created = creation.context else {
            free(protocolName)
            protocols.deallocate()
            throw .runtimeUnavailable("lws_create_context failed")
        }
        context = created

        let thread = Thread { [self] in self.serviceLoop() }
        thread.name = "rollcall-client-lws"
        thread.start()
    }

    /// Stops the service thread, closing every connection (their close handlers run with a
    /// dropped ``CloseInfo``). Blocks until the context is destroyed. Idempotent.
    public func shutdown() {
        lock.lock()
        let already = stopping
        stopping = true
        let ctx = context
        lock.unlock()
        guard !already, let ctx else { return }
        lws_cancel_service(ctx)
        finished.wait()
    }

    // MARK: Hand-over from other threads

    /// Queues a connection's handshake; service thread only.
    func serviceRequestConnect(_ connection: RollcallConnection) {
        waitingToConnect.append(connection)
        pumpConnects()
    }

    /// A handshake started by ``pumpConnects()`` finished (opened or failed); service thread only.
    func serviceHandshakeEnded() {
        handshakesInProgress -= 1
        pumpConnects()
    }

    private func pumpConnects() {
        guard !pumpingConnects else { return }
        pumpingConnects = true
        defer { pumpingConnects = false }
        while handshakesInProgress < options.maxConcurrentHandshakes, let next = waitingToConnect.popFirst() {
            handshakesInProgress += 1
            next.serviceConnect()
        }
    }

    /// Runs `work` on the service thread; once the runtime has shut down, runs it at once on
    /// the caller's thread (there is no lws context left to touch: connects fail, writes drop).
    func post(_ work: @escaping () -> Void) {
        lock.lock()
        if serviceEnded {
            lock.unlock()
            work()
            return
        }
        commands.append(work)
        wakeLocked()
    }

    /// Asks for a `WRITEABLE` callback on `connection` (from any thread).
    func requestWritable(_ connection: RollcallConnection) {
        lock.lock()
        writeRequests.append(connection)
        wakeLocked()
    }

    /// Called with `lock` held; releases it.
    private func wakeLocked() {
        let wake = !wakePending && !stopping
        wakePending = true
        let ctx = context
        lock.unlock()
        if wake, let ctx { lws_cancel_service(ctx) }
    }

    /// Runs queued work; service thread only.
    func drainCommands() {
        lock.lock()
        let work = commands
        let writers = writeRequests
        commands.removeAll(keepingCapacity: true)
        writeRequests.removeAll(keepingCapacity: true)
        wakePending = false
        lock.unlock()
        for item in work { item() }
        for connection in writers { connection.serviceWantsWrite() }
    }

    private func serviceLoop() {
        guard let ctx = context else { return }
        while true {
            lock.lock()
            let stop = stopping
            lock.unlock()
            if stop { break }
            drainCommands()
            if let eventLoop {
                eventLoop.runOnce()
            } else if lws_service(ctx, 0) < 0 {
                break
            }
        }
        drainCommands()
        lws_context_destroy(ctx)
        eventLoop?.destroy()
        eventLoop = nil
        lock.lock()
        context = nil
        lock.unlock()
        drainCommands() // connect requests that arrived meanwhile fail in RollcallConnection
        lock.lock()
        serviceEnded = true
        lock.unlock()
        drainCommands()
        finished.signal()
    }

    deinit {
        protocols.deallocate()
        free(protocolName)
    }
}
#endif
