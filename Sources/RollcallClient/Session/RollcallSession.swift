import Foundation
import RollcallProtocol

/// The async/await client: typed requests and results, typed events for any number of readers,
/// a ``Roster`` and a ``ChannelStatus`` per channel, liveness, and reconnect with backoff and
/// resume by token — over any ``WebSocketTransport`` (libwebsockets on Linux, URLSession on
/// Apple platforms; ``TransportFactory``).
///
/// - **Events**: ``events`` makes a reader of every event from then on, typed
///   (``RollcallEvent``); each reader has its own bounded buffer (``EventStream``: a reader that
///   falls ``eventBufferLimit`` events behind is ended with ``RollcallError/slowReader(limit:)``,
///   nobody else waits). ``states`` and ``rosterUpdates(of:limit:)`` keep the newest elements
///   for slow readers (``LatestStream``).
/// - **Channels**: ``join(_:presence:messages:state:)`` keeps the channel as intent: after a
///   reconnect that did not resume, the session joins it again; a join answered `RATE_LIMITED`
///   (or `UNAVAILABLE`, `INTERNAL`, `TIMEOUT`) is sent again after the reply's `retryAfterMs`,
///   one refused for good is kept as ``ChannelStatus/failed(_:)`` and tried after the next
///   login — never ending the session (``ChannelIntents``).
/// - **Liveness** (PROTOCOL §3, 1.2): with nothing received for the login's
///   `heartbeatIntervalSeconds` the session sends `ping`; after `heartbeatTimeoutSeconds` it
///   cuts the link and reconnects with its resume token. Every request has a timeout
///   (``requestTimeout``); one that passes throws code `TIMEOUT`.
/// - **Reconnect**: after a link is lost without a close from this side the session waits a
///   ``ReconnectPolicy`` delay, reconnects and logs in with the last `resumeToken`. Not after a
///   close that ended the session on purpose (``isFinal(_:hasTokenProvider:)``). With several
///   URLs (a cluster's nodes) each reconnect dials the next one, and for ``resumeWindow`` after
///   a drop a login that did not resume is not kept (docs/client.md, "Several URLs").
///
/// The connection's life is ``SessionLifecycle``, a value that returns actions; this class
/// carries them out (transports, timers, streams).
public final class RollcallSession: @unchecked Sendable {
    /// The connection's life cycle, as seen on ``states``.
    public enum ConnectionState: Sendable, Equatable {
        /// Opening the first connection (and logging in on it).
        case connecting
        /// Connected and logged in.
        case online
        /// The connection was lost; attempt `attempt` (0-based) is waiting or under way.
        case reconnecting(attempt: Int)
        /// Closed for good (``close()``, a refused login, a final close, reconnect disabled).
        case closed
    }

    /// The broker's URLs (a cluster's nodes), dialled in turn: the first at ``connect()``, the
    /// next one on each reconnect.
    public let urls: [String]
    /// When to reconnect.
    public let reconnect: ReconnectPolicy
    /// Seconds after a drop during which a reconnect's login that did not resume is logged out
    /// again at once and the next URL is tried (the held session's token is kept).
    public let resumeWindow: Double
    /// The transports the session opens.
    public let transport: TransportFactory
    /// How its transports are opened.
    public let options: TransportOptions
    /// Seconds a request waits for its reply before it throws code `TIMEOUT` (default 10).
    public let requestTimeout: Double
    /// Undelivered events an ``EventStream`` reader may hold before it is ended (default 1024).
    public let eventBufferLimit: Int

    let lock = NSLock()
    // Guarded by `lock`:
    var lifecycle: SessionLifecycle
    var intents: ChannelIntents
    var links: [Int: SessionLink] = [:]
    var loginRequest: Requests.Login?
    var latestLogin: LoginResult?
    var rosters: [ChannelRef: Roster] = [:]
    var rosterStreams: [ChannelRef: Broadcast<RosterUpdate>] = [:]
    /// Channels whose join was sent with presence and whose snapshot has not come yet.
    var awaitingSnapshot: Set<ChannelRef> = []
    /// The app's `join` calls waiting, per channel; a success waits for the snapshot when one is due.
    var joinWaiters: [ChannelRef: [CheckedContinuation<Result<JoinResult, RollcallError>, Never>]] = [:]
    var joinedBeforeSnapshot: [ChannelRef: JoinResult] = [:]
    var connectWaiter: CheckedContinuation<Result<Void, RollcallError>, Never>?
    var lastConnectFailure: ClientError?
    var provider: (@Sendable () async throws -> String)?
    var timers: [TimerKey: DispatchWorkItem] = [:]

    let eventBroadcast = Broadcast<RollcallEvent>()
    let stateBroadcast = Broadcast<ConnectionState>()

    /// A session that has not connected yet.
    public convenience init(url: String, reconnect: ReconnectPolicy = ReconnectPolicy(), transport: TransportFactory = .platformDefault,
                            options: TransportOptions = TransportOptions(), requestTimeout: Double = 10, eventBufferLimit: Int = 1024) {
        self.init(urls: [url], reconnect: reconnect, transport: transport, options: options, requestTimeout: requestTimeout,
                  eventBufferLimit: eventBufferLimit)
    }

    /// A session over several URLs (a cluster's nodes; at least one), dialled in turn.
    /// `resumeWindow` (seconds; default 5 with several URLs, else 0): how long after a drop a
    /// login that did not resume is discarded and the next URL tried.
    public init(urls: [String], reconnect: ReconnectPolicy = ReconnectPolicy(), resumeWindow: Double? = nil,
                transport: TransportFactory = .platformDefault, options: TransportOptions = TransportOptions(),
                requestTimeout: Double = 10, eventBufferLimit: Int = 1024) {
        precondition(!urls.isEmpty, "RollcallSession needs at least one URL")
        self.urls = urls
        self.reconnect = reconnect
        self.resumeWindow = max(0, resumeWindow ?? (urls.count > 1 ? 5 : 0))
        self.transport = transport
        self.options = options
        self.requestTimeout = max(0.001, requestTimeout)
        self.eventBufferLimit = max(1, eventBufferLimit)
        lifecycle = SessionLifecycle(settings: .init(reconnect: reconnect, resumeWindow: self.resumeWindow, urlCount: urls.count))
        intents = ChannelIntents(reconnect: reconnect)
    }

    // MARK: State

    /// The current connection state.
    public var state: ConnectionState { lock.withLock { SessionLifecycle.visibleState(lifecycle.phase) } }

    /// The URL dialled last.
    public var url: String { lock.withLock { urls[lifecycle.urlIndex] } }

    /// True when the current connection negotiated WebSocket compression (``TransportOptions/permessageDeflate``
    /// asked for it and the broker accepted it); false while there is no connection.
    public var isCompressed: Bool { currentLink()?.extensions.hasPrefix("permessage-deflate") ?? false }

    /// The result of the latest login, the automatic ones after a reconnect included
    /// (`resumed` tells whether the broker still held the session).
    public var lastLogin: LoginResult? { lock.withLock { latestLogin } }

    /// The roster of a channel joined with presence, kept from its snapshot and events (while
    /// offline: the last one known).
    public func roster(of channel: ChannelRef) -> Roster? { lock.withLock { rosters[channel] } }

    /// Where the session is with a channel the app joined; nil for one it is not in.
    public func status(of channel: ChannelRef) -> ChannelStatus? { lock.withLock { intents.entries[channel]?.status } }

    /// The channels the app is in or joining, with their status.
    public var channels: [ChannelRef: ChannelStatus] { lock.withLock { intents.entries.mapValues(\.status) } }

    // MARK: Streams

    /// A new reader of every event from now on, typed (multicast; ``EventStream`` has the
    /// buffering policy). Presence events are applied to ``roster(of:)`` before readers see them.
    public var events: EventStream { events(bufferLimit: eventBufferLimit) }

    /// A new reader of every event from now on that may fall `bufferLimit` events behind before
    /// it is ended (``events`` uses ``eventBufferLimit``).
    public func events(bufferLimit: Int) -> EventStream {
        EventStream(reader: eventBroadcast.subscribe(.endReader(limit: bufferLimit)))
    }

    /// A new reader of the connection states from now on (the newest 16 kept for a slow reader).
    public var states: LatestStream<ConnectionState> { LatestStream(reader: stateBroadcast.subscribe(.keepNewest(limit: 16))) }

    /// A new reader of `channel`'s roster changes from now on: after every presence event, page,
    /// re-read or status change, the whole roster (``RosterUpdate``). A slow reader keeps the
    /// newest `limit` updates (each says how many it skipped). Ends when the channel is left or
    /// the session closes; at once for a channel the app is not in.
    public func rosterUpdates(of channel: ChannelRef, limit: Int = 64) -> LatestStream<RosterUpdate> {
        let broadcast = lock.withLock { () -> Broadcast<RosterUpdate>? in
            guard lifecycle.phase != .closed, intents.entries[channel] != nil else { return nil }
            return rosterStream(channel)
        }
        guard let broadcast else {
            let ended = Broadcast<RosterUpdate>()
            ended.finish()
            return LatestStream(reader: ended.subscribe(.keepNewest(limit: 1)))
        }
        return LatestStream(reader: broadcast.subscribe(.keepNewest(limit: limit)))
    }

    /// The roster stream of a channel, made on first use; with `lock` held.
    func rosterStream(_ channel: ChannelRef) -> Broadcast<RosterUpdate> {
        if let existing = rosterStreams[channel] { return existing }
        let made = Broadcast<RosterUpdate> { update, skipped in update.skipped += skipped }
        rosterStreams[channel] = made
        return made
    }

    // MARK: Connecting

    /// Opens the WebSocket to the first URL. A connection that cannot be opened (refused, dropped
    /// in the handshake, timed out) is tried again with the reconnect policy's backoff, each time
    /// on the next URL, and ``states`` says `reconnecting(attempt:)` meanwhile; this returns once
    /// a link is open. It throws at once for a failure that cannot pass (`INVALID_URL`,
    /// `TRANSPORT_UNSUPPORTED`) or when reconnecting is off, and `CLOSED` when ``close()`` is
    /// called or the calling task is cancelled while it waits (the session is then `idle` again,
    /// and `connect()` may be called anew).
    public func connect() async throws(RollcallError) {
        let result: Result<Void, RollcallError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let actions = lock.withLock { () -> [SessionLifecycle.Action]? in
                    guard lifecycle.phase == .idle, !Task.isCancelled else { return nil }
                    connectWaiter = continuation
                    lastConnectFailure = nil
                    return lifecycle.connect(now: Self.now)
                }
                guard let actions else {
                    let why = Task.isCancelled ? "connect() was cancelled" : "connect() was called already"
                    continuation.resume(returning: .failure(.connection(.closed(Self.notConnected(why)))))
                    return
                }
                perform(actions)
            }
        } onCancel: {
            let info = Self.notConnected("connect() was cancelled")
            perform(lock.withLock { () -> [SessionLifecycle.Action] in
                lastConnectFailure = .closed(info)
                return lifecycle.connectCancelled(info: info)
            })
        }
        try result.get()
    }

    /// Logs in on the connection ``connect()`` opened; the login (and later its `resumeToken`)
    /// is remembered for reconnects.
    @discardableResult
    public func login(userId: String, platform: String? = nil, token: String? = nil, customStatus: String? = nil,
                      presenceTimeout: Double? = nil) async throws(RollcallError) -> LoginResult {
        let request = Requests.Login(userId: userId, platform: platform, token: token, customStatus: customStatus,
                                     presenceTimeout: presenceTimeout)
        guard let link = lock.withLock({ () -> SessionLink? in
            guard case .open(let number) = lifecycle.phase else { return nil }
            return links[number]
        }) else { throw .connection(.closed(Self.notConnected("login needs a connection opened by connect() and not logged in yet"))) }
        let result = try await send(request, on: link)
        let actions = lock.withLock { () -> [SessionLifecycle.Action] in
            loginRequest = request
            latestLogin = result
            return lifecycle.appLoggedIn(Self.lifecycleLogin(result), link: link.number, now: Self.now)
        }
        perform(actions)
        return result
    }

    /// `refresh {token}` (PROTOCOL §3, 1.1): hands the broker a fresh token for the same user
    /// without reconnecting; returns the new `expiresAt` (ms). The token is remembered, so a
    /// later automatic reconnect logs in with it. A refused token throws `UNAUTHORIZED` and
    /// leaves the connection and the old token as they were.
    @discardableResult
    public func refresh(token: String) async throws(RollcallError) -> Int? {
        let expiresAt = try await send(Requests.Refresh(token: token)).expiresAt
        lock.withLock {
            loginRequest?.token = token
            latestLogin?.expiresAt = expiresAt
        }
        return expiresAt
    }

    /// Fetches a fresh token from the application's backend (PROTOCOL §3, 1.1). When set, the
    /// session calls it on each `refreshRequired` event and sends the token with ``refresh(token:)``,
    /// and before each automatic reconnect's login (so a reconnect after the old token expired
    /// still logs in, and 4401 is not final). Set it before ``login(userId:platform:token:customStatus:presenceTimeout:)``.
    public var tokenProvider: (@Sendable () async throws -> String)? {
        get { lock.withLock { provider } }
        set {
            lock.withLock {
                provider = newValue
                lifecycle.hasTokenProvider = newValue != nil
            }
        }
    }

    /// Closes the connection (close frame 1000) and stops reconnecting; every stream finishes.
    public func close() {
        perform(lock.withLock { lifecycle.close() })
    }

    // MARK: Final closes

    /// Whether a close ended the session on purpose, so that reconnecting would undo it:
    /// 1000 (logout), 4403 (disconnected by the server API), 4409 (over `maxSessionsPerUser`:
    /// reconnecting would close another of the user's sessions), and 4401 (unauthorized or
    /// token expired) unless a token provider can supply a fresh token.
    public static func isFinal(_ info: CloseInfo, hasTokenProvider: Bool = false) -> Bool {
        guard info.closedByServer, let code = info.code else { return false }
        if code == 4401 { return !hasTokenProvider }
        return [1000, 4403, 4409].contains(code)
    }

    /// Whether a close says the session is gone, so no resume can succeed: 4401 (the token
    /// expired: ended as by a close frame) and 1012 (``CloseInfo/isClusterDataLost``).
    static func endedTheSession(_ info: CloseInfo) -> Bool {
        info.code == 4401 || info.isClusterDataLost
    }

    // MARK: Helpers

    /// The monotonic clock, in seconds (timers and windows must not move with the wall clock).
    static var now: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    static func notConnected(_ why: String) -> CloseInfo {
        CloseInfo(code: nil, reason: why, closedByServer: false, dropped: true)
    }

    /// The link the session talks on now (any phase with a link).
    func currentLink() -> SessionLink? {
        lock.withLock { lifecycle.currentLink.flatMap { links[$0] } }
    }

    static func lifecycleLogin(_ result: LoginResult) -> SessionLifecycle.Login {
        SessionLifecycle.Login(resumeToken: result.resumeToken, resumed: result.resumed, channels: result.channels,
                               heartbeatInterval: result.limits.livenessInterval, heartbeatTimeout: result.limits.livenessTimeout)
    }
}

extension RollcallSession {
    /// Cuts the current connection without a close frame, as a network failure would (the
    /// session then reconnects and resumes).
    @_spi(Testing)
    public func dropConnection() {
        currentLink()?.abort()
    }
}
