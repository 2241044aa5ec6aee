// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
import CLibWebSockets
import DequeModule
import Foundation
import RollcallProtocol

/// One WebSocket connection to a Rollcall broker.
///
/// Requests are `{"id":…,"op":…,…}` objects with automatic integer ids; replies are matched
/// to their request by id; every incoming frame is split on `\n` into JSON objects, and
/// events are delivered in arrival order.
///
/// Two styles share one core and may be mixed:
/// - blocking, with timeouts (tests, CLI): ``request(_:_:id:timeout:)``,
///   ``nextEvent(timeout:)``, ``waitForEvent(timeout:where:)``, ``waitForClose(timeout:)``;
/// - callbacks (benchmarks): ``send(_:_:id:onReply:)``, ``onEvent``, ``onReply``,
///   ``onClose``. Callbacks run on the runtime's service thread and must not block.
///
/// All public methods are thread-safe.
public final class RollcallConnection: @unchecked Sendable {
    /// Connection life cycle.
    public enum State: Sendable, Equatable {
        /// The WebSocket handshake is in progress.
        case connecting
        /// The handshake succeeded.
        case open
        /// The connection has ended; see ``closeInfo``.
        case closed
    }

    /// The address connected to.
    public let url: WebSocketURL
    /// The subprotocol offered in the handshake, if any.
    public let subprotocol: String?
    /// The `Origin` header sent in the handshake, if any.
    public let origin: String?
    /// The runtime servicing this connection.
    public let runtime: ClientRuntime
    /// For `wss://`: accept a self-signed server certificate and skip the host name check
    /// (development and tests only; the connection is encrypted but not authenticated).
    public let allowSelfSignedCertificate: Bool
    /// Offers WebSocket compression (RFC 7692 `permessage-deflate`, lws' implementation) in the
    /// handshake. The broker accepts it only with `http.permessageDeflate` on; otherwise the
    /// connection runs uncompressed. See ``isCompressed``.
    public let permessageDeflate: Bool

    let cond = NSCondition()
    // Guarded by `cond`:
    /// Where the socket is (``SocketLifecycle``: the handshake, our close or drop, the
    /// broker's close, the end).
    var lifecycle = SocketLifecycle()
    var outgoing = Deque<Outgoing>()
    var writeScheduled = false
    var nextID = 1
    var awaited = Set<String>()
    var arrived: [String: Reply] = [:]
    var replyCallbacks: [String: (Reply) -> Void] = [:]
    var events = Deque<Event>()
    var unmatchedReplies = Deque<Reply>()
    var acceptedExtensions = ""
    var connectError: String?
    var counts = Counters()
    var recordTranscript = false
    var transcriptObjects: [JSONObject] = []
    var eventHandler: ((Event) -> Void)?
    var rawEventHandler: ((UnsafeRawBufferPointer) -> Void)?
    var replyHandler: ((Reply) -> Void)?
    var closeHandler: ((CloseInfo) -> Void)?
    var openHandler: (() -> Void)?
    var messageHandler: (([UInt8]) -> Void)?

    // Service-thread state:
    var wsi: OpaquePointer?
    var lwsRetained = false
    var rxAssembly: [UInt8] = []
    var cStrings: [UnsafeMutablePointer<CChar>] = []

    /// Byte and frame counts, for tests and benchmarks.
    public struct Counters: Sendable, Equatable {
        /// Complete WebSocket messages received.
        public var framesReceived = 0
        /// JSON objects received (a batched frame carries several).
        public var objectsReceived = 0
        /// Payload bytes received.
        public var bytesReceived = 0
        /// Lines of a received frame that were not JSON objects.
        public var malformedObjects = 0
        /// Messages (or fragments) handed to the socket.
        public var framesSent = 0
    }

    /// Starts connecting to `url` (`ws://host:port/path`) and returns at once; use
    /// ``waitUntilOpen(timeout:)`` or ``onOpen`` to learn when the handshake succeeded.
    ///
    /// - Parameters:
    ///   - subprotocol: offered as `Sec-WebSocket-Protocol` (e.g. `rollcall.v1`); nil offers none.
    ///   - origin: sent as the `Origin` header; nil sends none.
    ///   - recordTranscript: keep every received object in order (see ``transcript``).
    ///   - allowSelfSignedCertificate: for `wss://`, accept a self-signed certificate and skip
    ///     the host name check (development and tests only).
    ///   - permessageDeflate: offer `permessage-deflate` (off by default; see ``permessageDeflate``).
    public init(
        url: String, subprotocol: String? = nil, origin: String? = nil,
        recordTranscript: Bool = false, runtime: ClientRuntime = .shared,
        allowSelfSignedCertificate: Bool = false, permessageDeflate: Bool = false
    ) throws(ClientError) {
        self.permessageDeflate = permessageDeflate
        self.url = try WebSocketURL(url)
        self.subprotocol = subprotocol
        self.origin = origin
        self.runtime = runtime
        self.allowSelfSignedCertificate = allowSelfSignedCertificate
        self.recordTranscript = recordTranscript
    }

    /// Begins the handshake (once; later calls do nothing). Handlers set before this call
    /// see every callback.
    public func start() {
        let actions = cond.withLock { lifecycle.start() }
        guard actions.contains(.beginHandshake) else { return }
        runtime.post { [self] in self.runtime.serviceRequestConnect(self) }
    }

    /// Connects and waits for the handshake; throws ``ClientError/connectFailed(_:)`` or
    /// ``ClientError/timeout(_:)``.
    public static func connect(
        url: String, subprotocol: String? = nil, origin: String? = nil,
        recordTranscript: Bool = false, runtime: ClientRuntime = .shared,
        timeout: Duration = .seconds(5), allowSelfSignedCertificate: Bool = false,
        permessageDeflate: Bool = false
    ) throws(ClientError) -> RollcallConnection {
        let connection = try RollcallConnection(
            url: url, subprotocol: subprotocol, origin: origin,
            recordTranscript: recordTranscript, runtime: runtime,
            allowSelfSignedCertificate: allowSelfSignedCertificate, permessageDeflate: permessageDeflate)
        connection.start()
        do {
            try connection.waitUntilOpen(timeout: timeout)
        } catch {
            connection.drop()
            throw error
        }
        return connection
    }

    deinit {
        for pointer in cStrings { free(pointer) }
    }

    // MARK: State

    /// The life-cycle state (call with `cond` held).
    var state: State {
        switch lifecycle.state {
        case .idle, .handshaking: .connecting
        case .open, .closing, .peerClosed, .dropping: .open
        case .closed: .closed
        }
    }

    /// How the connection ended, once it has (call with `cond` held).
    var finalClose: CloseInfo? { lifecycle.closeInfo }

    /// True once the server accepted `permessage-deflate` in the handshake: frames in both
    /// directions are then compressed (lws inflates and deflates them; the API is unchanged).
    public var isCompressed: Bool { cond.withLock { acceptedExtensions.hasPrefix("permessage-deflate") } }

    /// The server's `Sec-WebSocket-Extensions` response header ("" when none), e.g.
    /// `permessage-deflate; client_max_window_bits=15`.
    public var negotiatedExtensions: String { cond.withLock { acceptedExtensions } }

    /// The current life-cycle state.
    public var currentState: State { cond.withLock { state } }

    /// True while the WebSocket is open.
    public var isOpen: Bool { currentState == .open }

    /// How the connection ended, once it has.
    public var closeInfo: CloseInfo? { cond.withLock { finalClose } }

    /// Frame and byte counts so far.
    public var counters: Counters { cond.withLock { counts } }

    /// Every object received so far, in order, when created with `recordTranscript`.
    @_spi(Testing)
    public var transcript: [JSONObject] { cond.withLock { transcriptObjects } }

    /// Waits for the handshake to finish.
    public func waitUntilOpen(timeout: Duration) throws(ClientError) {
        let deadline = timeout.deadlineFromNow
        cond.lock()
        defer { cond.unlock() }
        while state == .connecting {
            if !cond.wait(until: deadline) && state == .connecting {
                throw .timeout("the WebSocket handshake with \(url)")
            }
        }
        if state == .closed {
            throw .connectFailed(connectError ?? finalClose?.description ?? "closed")
        }
    }

    // MARK: Handlers

    /// Called on the service thread for every event; while set, events are not queued for
    /// ``nextEvent(timeout:)``.
    public var onEvent: ((Event) -> Void)? {
        get { cond.withLock { eventHandler } }
        set { cond.withLock { eventHandler = newValue } }
    }

    /// Called on the service thread with the raw bytes of every event line (an object that
    /// starts with `{"event":`, as the broker writes them) instead of parsing it; while set,
    /// ``onEvent`` and ``nextEvent(timeout:)`` see no events and the line is not in the
    /// transcript. Replies are parsed as usual. For load generators that count or scan events
    /// without paying for a JSON parse; the buffer is valid only during the call.
    public var onRawEvent: ((UnsafeRawBufferPointer) -> Void)? {
        get { cond.withLock { rawEventHandler } }
        set { cond.withLock { rawEventHandler = newValue } }
    }

    /// Called on the service thread for every reply that no waiter or per-request callback
    /// claimed; while set, such replies are not queued for ``nextUnmatchedReply(timeout:)``.
    public var onReply: ((Reply) -> Void)? {
        get { cond.withLock { replyHandler } }
        set { cond.withLock { replyHandler = newValue } }
    }

    /// Called once on the service thread when the connection ends (or fails to open).
    public var onClose: ((CloseInfo) -> Void)? {
        get { cond.withLock { closeHandler } }
        set { cond.withLock { closeHandler = newValue } }
    }

    /// Called once on the service thread when the handshake succeeds.
    public var onOpen: (() -> Void)? {
        get { cond.withLock { openHandler } }
        set { cond.withLock { openHandler = newValue } }
    }

    /// Called on the service thread with every received message whole, before it is split or
    /// parsed; while set, nothing is parsed, queued or matched (the message is only counted).
    /// The transport seam's hook (``TransportFactory/libwebsockets(runtime:)``).
    public var onMessage: (([UInt8]) -> Void)? {
        get { cond.withLock { messageHandler } }
        set { cond.withLock { messageHandler = newValue } }
    }

    // MARK: Requests

    /// Sends `{"id":…,"op":op,…args}` without waiting and returns the id used.
    ///
    /// - Parameters:
    ///   - args: an object whose members are appended after `id` and `op`.
    ///   - id: the request id; nil picks the next integer.
    ///   - onReply: called on the service thread with the matching reply.
    @discardableResult
    public func send(_ op: String, _ args: JSON = [:], id: JSON? = nil, onReply: ((Reply) -> Void)? = nil) -> JSON {
        cond.lock()
        let requestID = id ?? .int(takeIDLocked())
        if let onReply { replyCallbacks[Self.key(requestID)] = onReply }
        cond.unlock()
        enqueue(.text(Self.encodeRequest(op, args, id: requestID)))
        return requestID
    }

    /// Sends a request of the protocol's vocabulary and waits for its reply, as the
    /// `String` form does (which also sends ops outside it, as a raw client may).
    public func request(_ op: Op, _ args: JSON = [:], id: JSON? = nil, timeout: Duration = .seconds(5)) throws(ClientError) -> Reply {
        try request(op.rawValue, args, id: id, timeout: timeout)
    }

    /// Sends a request and waits for its reply. Error replies are returned, not thrown;
    /// throws only when no reply arrives (``ClientError/timeout(_:)``, ``ClientError/closed(_:)``).
    public func request(_ op: String, _ args: JSON = [:], id: JSON? = nil, timeout: Duration = .seconds(5)) throws(ClientError) -> Reply {
        cond.lock()
        let requestID = id ?? .int(takeIDLocked())
        awaited.insert(Self.key(requestID))
        cond.unlock()
        enqueue(.text(Self.encodeRequest(op, args, id: requestID)))
        return try waitForReply(id: requestID, timeout: timeout)
    }

    /// Like ``request(_:_:id:timeout:)`` but returns the `result` and throws
    /// ``ClientError/server(code:message:)`` on an error reply.
    @discardableResult
    public func call(_ op: String, _ args: JSON = [:], timeout: Duration = .seconds(5)) throws(ClientError) -> JSON {
        let reply = try request(op, args, timeout: timeout)
        guard reply.ok else {
            throw .server(code: reply.errorCodeText ?? "UNKNOWN", message: reply.errorMessage ?? "")
        }
        return reply.result
    }

    /// Registers interest in the reply with this id before sending something raw that will
    /// cause it (e.g. `.null` for an unparsable frame), so ``waitForReply(id:timeout:)`` finds it.
    @_spi(Testing)
    public func expectReply(id: JSON) {
        cond.withLock { _ = awaited.insert(Self.key(id)) }
    }

    /// Waits for the reply with this id: one registered by ``request(_:_:id:timeout:)`` or
    /// ``expectReply(id:)``, or one that arrived unclaimed (e.g. after ``send(_:_:id:onReply:)``
    /// without a callback).
    public func waitForReply(id: JSON, timeout: Duration) throws(ClientError) -> Reply {
        let key = Self.key(id)
        let deadline = timeout.deadlineFromNow
        cond.lock()
        defer { cond.unlock() }
        awaited.insert(key)
        while true {
            if let reply = arrived.removeValue(forKey: key) {
                awaited.remove(key)
                return reply
            }
            if let index = unmatchedReplies.firstIndex(where: { Self.key($0.id) == key }) {
                awaited.remove(key)
                return unmatchedReplies.remove(at: index)
            }
            if let info = finalClose {
                awaited.remove(key)
                throw .closed(info)
            }
            if !cond.wait(until: deadline), arrived[key] == nil {
                awaited.remove(key)
                throw .timeout("the reply to request \(key)")
            }
        }
    }

    /// `login` with the given fields (nil fields are omitted). Returns the reply.
    public func login(
        userId: String, platform: String? = nil, token: String? = nil, customStatus: String? = nil,
        presenceTimeout: Double? = nil, resumeToken: String? = nil, timeout: Duration = .seconds(5)
    ) throws(ClientError) -> Reply {
        var args = JSONObject()
        args["userId"] = .string(userId)
        if let platform { args["platform"] = .string(platform) }
        if let token { args["token"] = .string(token) }
        if let customStatus { args["customStatus"] = .string(customStatus) }
        if let presenceTimeout { args["presenceTimeout"] = .number(JSONNumber(presenceTimeout)) }
        if let resumeToken { args["resumeToken"] = .string(resumeToken) }
        return try request(.login, .object(args), timeout: timeout)
    }

    /// `refresh {token}` (PROTOCOL §3, 1.1): a fresh token for the logged-in user. Returns the
    /// reply (`result.expiresAt`, or `UNAUTHORIZED` with the connection left open).
    public func refresh(token: String, timeout: Duration = .seconds(5)) throws(ClientError) -> Reply {
        try request(.refresh, ["token": .string(token)], timeout: timeout)
    }

    // MARK: Closing

    /// Sends a close frame with `code` and `reason` after everything queued before it, then
    /// completes the closing handshake.
    public func close(code: UInt16 = 1000, reason: String = "") {
        enqueue(.close(code, reason))
    }

    /// Ends the TCP connection abruptly, without a close frame, after what is queued.
    @_spi(Testing)
    public func drop() {
        enqueue(.drop)
    }

    /// Waits until the connection has ended and returns how.
    @discardableResult
    public func waitForClose(timeout: Duration) throws(ClientError) -> CloseInfo {
        let deadline = timeout.deadlineFromNow
        cond.lock()
        defer { cond.unlock() }
        while true {
            if let info = finalClose { return info }
            if !cond.wait(until: deadline), finalClose == nil { throw .timeout("the connection to close") }
        }
    }

    // MARK: Helpers

    func takeIDLocked() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    func enqueue(_ item: Outgoing) { enqueue(contentsOf: CollectionOfOne(item)) }

    func enqueue(contentsOf items: some Sequence<Outgoing>) {
        cond.lock()
        guard state != .closed else { cond.unlock(); return }
        outgoing.append(contentsOf: items)
        let wake = state == .open && !writeScheduled
        if wake { writeScheduled = true }
        cond.unlock()
        if wake { runtime.requestWritable(self) }
    }

    /// The dictionary key of a request id: its compact JSON text.
    static func key(_ id: JSON) -> String { id.compactString }

    static func encodeRequest(_ op: String, _ args: JSON, id: JSON) -> [UInt8] {
        var writer = JSONWriter(capacity: 64)
        writer.beginObject()
        writer.key("id"); writer.value(id)
        writer.key("op"); writer.string(op)
        if case .object(let object) = args {
            for member in object.members where member.key != "id" && member.key != "op" {
                writer.key(member.key); writer.value(member.value)
            }
        }
        writer.endObject()
        return writer.bytes
    }
}
#endif
