import Foundation
import RollcallProtocol

/// The async/await client: typed requests, an `AsyncStream` of events, a ``Roster`` per
/// presence-enabled channel, and automatic reconnect with backoff and resume by token.
///
/// Built on ``RollcallConnection`` (libwebsockets on the runtime's service thread): async
/// calls suspend and are resumed from the connection's callbacks; no caller thread blocks.
///
/// After a connection is lost without a close from this side, the session waits a
/// ``ReconnectPolicy`` delay, reconnects and logs in with the last `resumeToken`. When the
/// broker still held the session (`resumed: true`) its channels are kept and each roster is
/// replaced by the snapshot that follows; otherwise the session joins its channels again.
///
/// Not after a close that ended the session on purpose (``isFinal(_:hasTokenProvider:)``: 1000 logout, 4403
/// disconnected by the server API, 4409 over `maxSessionsPerUser`, 4401 without a
/// ``tokenProvider``): reconnecting would undo it, and after 4409 two devices would take turns
/// closing each other. With several URLs (a cluster's nodes) each reconnect dials the next
/// one, and for ``resumeWindow`` after a drop a login that did not resume is not kept: its
/// node may not have been declared dead yet (docs/client.md, "Several URLs").
public final class RollcallSession: @unchecked Sendable {
    /// The connection's life cycle, as seen on ``states``.
    public enum ConnectionState: Sendable, Equatable {
        /// Opening the first connection.
        case connecting
        /// Connected (and logged in again after a reconnect).
        case online
        /// The connection was lost; attempt `attempt` (0-based) is waiting or under way.
        case reconnecting(attempt: Int)
        /// Closed for good (``close()``, a refused resume, or reconnect disabled).
        case closed
    }

    /// The broker's URLs (a cluster's nodes), dialled in turn: the first at ``connect()``, the
    /// next one on each reconnect.
    public let urls: [String]
    /// The URL dialled last.
    public var url: String { lock.withLock { urls[urlIndex] } }
    /// When to reconnect.
    public let reconnect: ReconnectPolicy
    /// Seconds after a drop during which a reconnect's login that did not resume is logged out
    /// again at once and the next URL is tried (the held session's token is kept).
    public let resumeWindow: Double
    /// Every event received, in order (presence events already applied to ``roster(of:)``).
    public let events: AsyncStream<Event>
    /// Every connection state change.
    public let states: AsyncStream<ConnectionState>

    let runtime: ClientRuntime
    let eventSink: AsyncStream<Event>.Continuation
    let stateSink: AsyncStream<ConnectionState>.Continuation
    let lock = NSLock()
    // Guarded by `lock`:
    var connection: RollcallConnection?
    var loginRequest: Requests.Login?
    var resumeToken: String?
    var joins: [ChannelRef: Requests.Join] = [:]
    var rosters: [ChannelRef: Roster] = [:]
    var current: ConnectionState = .connecting
    var latestLogin: LoginResult?
    var closing = false
    var urlIndex = 0
    /// While the resume window is open: when it ends (monotonic seconds).
    var resumeUntil: Double?
    /// The connection of a login that did not resume in the window, being logged out again,
    /// and the attempt to make when it is gone.
    var discarded: (connection: RollcallConnection, nextAttempt: Int)?
    var provider: (@Sendable () async throws -> String)?
    /// `join` calls waiting for their channel's snapshot (resumed when it is applied or the connection ends).
    var snapshotWaiters: [ChannelRef: [CheckedContinuation<Void, Never>]] = [:]
    /// Channels joined with presence whose first snapshot has not been applied yet.
    var awaitingSnapshot: Set<ChannelRef> = []

    /// Whether each connection offers WebSocket compression (``RollcallConnection/permessageDeflate``).
    public let permessageDeflate: Bool

    /// A session that has not connected yet; `permessageDeflate` offers WebSocket compression
    /// (used only when the broker runs with `http.permessageDeflate` on).
    public convenience init(url: String, reconnect: ReconnectPolicy = ReconnectPolicy(), runtime: ClientRuntime = .shared,
                            permessageDeflate: Bool = false) {
        self.init(urls: [url], reconnect: reconnect, runtime: runtime, permessageDeflate: permessageDeflate)
    }

    /// A session over several URLs (a cluster's nodes; at least one), dialled in turn.
    /// `resumeWindow` (seconds; default 5 with several URLs, else 0): how long after a drop a
    /// login that did not resume is discarded and the next URL tried.
    public init(urls: [String], reconnect: ReconnectPolicy = ReconnectPolicy(), resumeWindow: Double? = nil,
                runtime: ClientRuntime = .shared, permessageDeflate: Bool = false) {
        precondition(!urls.isEmpty, "RollcallSession needs at least one URL")
        self.urls = urls
        self.resumeWindow = max(0, resumeWindow ?? (urls.count > 1 ? 5 : 0))
        self.permessageDeflate = permessageDeflate
        self.reconnect = reconnect
        self.runtime = runtime
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
        (states, stateSink) = AsyncStream.makeStream(of: ConnectionState.self)
    }

    /// The current connection state.
    public var state: ConnectionState { lock.withLock { current } }

    /// True when the current connection negotiated WebSocket compression (``permessageDeflate``
    /// asked for it and the broker accepted it); false while there is no connection.
    public var isCompressed: Bool { lock.withLock { connection }?.isCompressed ?? false }

    /// The result of the latest login, the automatic ones after a reconnect included
    /// (`resumed` tells whether the broker still held the session).
    public var lastLogin: LoginResult? { lock.withLock { latestLogin } }

    /// The roster of a channel joined with presence, kept from its snapshot and events.
    public func roster(of channel: ChannelRef) -> Roster? { lock.withLock { rosters[channel] } }

    /// Opens the WebSocket.
    public func connect() async throws(RollcallError) {
        setState(.connecting)
        let opened = await open()
        switch opened {
        case .success(let connection): lock.withLock { self.connection = connection }
        case .failure(let error): throw error
        }
    }

    /// Logs in; the login (and later its `resumeToken`) is remembered for reconnects.
    @discardableResult
    public func login(userId: String, platform: String? = nil, token: String? = nil, customStatus: String? = nil,
                      presenceTimeout: Double? = nil) async throws(RollcallError) -> LoginResult {
        let request = Requests.Login(userId: userId, platform: platform, token: token, customStatus: customStatus,
                                     presenceTimeout: presenceTimeout)
        let result = try await send(request)
        lock.withLock {
            loginRequest = request
            resumeToken = result.resumeToken
            latestLogin = result
        }
        setState(.online)
        return result
    }

    /// `refresh {token}` (PROTOCOL §3, 1.1): hands the broker a fresh token for the same user
    /// without reconnecting; returns the new `expiresAt` (ms). The token is remembered, so a
    /// later automatic reconnect logs in with it. Call it when a `session` event of type
    /// `refreshRequired` arrives. A refused token throws `UNAUTHORIZED` and leaves the
    /// connection and the old token as they were.
    @discardableResult
    public func refresh(token: String) async throws(RollcallError) -> Int? {
        let expiresAt = try await send(Requests.Refresh(token: token))
        lock.withLock {
            loginRequest?.token = token
            latestLogin?.expiresAt = expiresAt
        }
        return expiresAt
    }

    /// Joins a channel; with `presence` its ``roster(of:)`` is kept, and the call returns once
    /// the snapshot that follows the reply has been applied to it (or the connection ended), so
    /// the roster is ready when `join` returns. Joined again after a reconnect that could not resume.
    @discardableResult
    public func join(_ channel: ChannelRef, presence: Bool = true, messages: Bool = true,
                     state: [String: String]? = nil) async throws(RollcallError) -> JoinResult {
        let request = Requests.Join(channel, presence: presence, messages: messages, state: state)
        let rejoin = lock.withLock { () -> Bool in
            joins[channel] = request
            guard presence else { return false }
            if rosters[channel] == nil {
                rosters[channel] = Roster(channel: channel.channel, channelType: channel.channelType)
                awaitingSnapshot.insert(channel)
                return false
            }
            return true
        }
        let result = try await send(request)
        // PROTOCOL §4: the joining session gets a `snapshot` after the reply. A roster that already
        // had one (joined again) is updated by the new one when it comes; a new one waits for it.
        if presence, !rejoin { await snapshotApplied(channel) }
        return result
    }

    /// Returns once `channel`'s roster has applied a snapshot, the roster is gone, or there is no connection.
    private func snapshotApplied(_ channel: ChannelRef) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = lock.withLock { () -> Bool in
                guard connection != nil, rosters[channel] != nil, awaitingSnapshot.contains(channel) else { return true }
                snapshotWaiters[channel, default: []].append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Resumes the `join` calls waiting for `channel`'s snapshot (all channels when nil).
    func releaseSnapshotWaiters(_ channel: ChannelRef?) {
        let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            if let channel {
                awaitingSnapshot.remove(channel)
                return snapshotWaiters.removeValue(forKey: channel) ?? []
            }
            defer { snapshotWaiters.removeAll(); awaitingSnapshot.removeAll() }
            return snapshotWaiters.values.flatMap { $0 }
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Leaves a channel and forgets its roster.
    public func leave(_ channel: ChannelRef) async throws(RollcallError) {
        lock.withLock {
            joins[channel] = nil
            rosters[channel] = nil
        }
        releaseSnapshotWaiters(channel)
        _ = try await send(Requests.Leave(channel))
    }

    /// Fetches a fresh token from the application's backend (PROTOCOL §3, 1.1). When set, the
    /// session calls it on each `refreshRequired` event and sends the token with ``refresh(token:)``,
    /// and before each automatic reconnect's login (so a reconnect after the old token expired
    /// still logs in). A provider that throws leaves things as they are: the broker closes the
    /// session at its token's expiry. Set it before ``login(userId:platform:token:customStatus:presenceTimeout:)``.
    public var tokenProvider: (@Sendable () async throws -> String)? {
        get { lock.withLock { provider } }
        set { lock.withLock { provider = newValue } }
    }

    /// Sends any typed request and waits for its reply (without blocking a thread).
    public func send<Request: RollcallRequest>(_ request: Request) async throws(RollcallError) -> Request.Result {
        guard let connection = lock.withLock({ connection }) else { throw .connection(.closed(Self.notConnected)) }
        noteOwnChange(request)
        let reply: Result<Reply, RollcallError> = await withCheckedContinuation { continuation in
            let once = Once()
            let watcher = connection.addCloseWatcher { info in
                once.run { continuation.resume(returning: .failure(.connection(.closed(info)))) }
            }
            connection.send(Request.op, .object(request.arguments)) { reply in
                connection.removeCloseWatcher(watcher)
                once.run { continuation.resume(returning: .success(reply)) }
            }
        }
        let answer = try reply.get()
        guard answer.ok else { throw RollcallError(reply: answer) }
        guard let result = Request.decode(answer.result) else {
            throw .unexpectedResult(op: Request.op, result: answer.result.compactString)
        }
        return result
    }

    /// Closes the connection (close frame 1000) and stops reconnecting; the streams finish.
    public func close() {
        let connection = lock.withLock { () -> RollcallConnection? in
            closing = true
            return self.connection
        }
        connection?.close()
        releaseSnapshotWaiters(nil)
        setState(.closed)
        eventSink.finish()
        stateSink.finish()
    }

    // MARK: Connection

    private static let notConnected = CloseInfo(code: nil, reason: "not connected", closedByServer: false, dropped: true)

    /// Opens one connection to ``url`` with the session's handlers; resumes when it is open or failed.
    func open() async -> Result<RollcallConnection, RollcallError> {
        let connection: RollcallConnection
        do { connection = try RollcallConnection(url: url, runtime: runtime, permessageDeflate: permessageDeflate) } catch { return .failure(.connection(error)) }
        return await withCheckedContinuation { continuation in
            let once = Once()
            connection.onEvent = { [weak self] event in self?.received(event, on: connection) }
            connection.onOpen = { once.run { continuation.resume(returning: .success(connection)) } }
            connection.onClose = { [weak self] info in
                let failedToOpen = once.run { continuation.resume(returning: .failure(.connection(.connectFailed(info.description)))) }
                connection.runCloseWatchers(info)
                // The handlers capture the connection: release them to end the cycle.
                connection.onEvent = nil
                connection.onOpen = nil
                connection.onClose = nil
                if !failedToOpen { self?.lost(connection, info) }
            }
            connection.start()
        }
    }

    /// Service thread: applies presence events to the rosters, fetches pages, re-reads after
    /// a gap, and hands the event on.
    func received(_ event: Event, on connection: RollcallConnection) {
        if event.name == "presence", let name = event["channel"]?.stringValue {
            let channel = ChannelRef(name, type: event["channelType"]?.stringValue ?? "message")
            let outcome = lock.withLock { rosters[channel]?.apply(event) }
            if let outcome { follow(outcome, channel: channel, on: connection) }
            if event.type == "snapshot" { releaseSnapshotWaiters(channel) }
        }
        if event.name == "session", event.type == "refreshRequired", let provider = tokenProvider {
            Task { [weak self] in
                guard let token = try? await provider() else { return }
                _ = try? await self?.refresh(token: token)
            }
        }
        eventSink.yield(event)
    }

    /// Reads what a roster asked for (a page or a re-read), on the service thread, in order with events.
    private func follow(_ outcome: RosterOutcome, channel: ChannelRef, on connection: RollcallConnection) {
        let page: String?
        switch outcome {
        case .fetchPage(let next): page = next
        case .needsResync: page = nil
        case .applied, .ignored: return
        }
        let request = Requests.GetOnlineUsers(channel, includeState: true, page: page, pageSize: 1000)
        connection.send(Requests.GetOnlineUsers.op, .object(request.arguments)) { [weak self] reply in
            guard let self, reply.ok, let users = Requests.GetOnlineUsers.decode(reply.result) else { return }
            let next = self.lock.withLock { () -> RosterOutcome? in
                if page == nil { return self.rosters[channel]?.resync(users: users.users, seq: users.seq, nextPage: users.nextPage) }
                return self.rosters[channel]?.merge(page: users.users, nextPage: users.nextPage)
            }
            if let next { self.follow(next, channel: channel, on: connection) }
        }
    }

    /// Events about the own user are not sent to it but step the channel's seq.
    private func noteOwnChange(_ request: some RollcallRequest) {
        let channel: ChannelRef? = switch request {
        case let setState as Requests.SetState: setState.channel
        case let removeState as Requests.RemoveState: removeState.channel
        default: nil
        }
        guard let channel else { return }
        lock.withLock { rosters[channel]?.allowSkippedSeq() }
    }

    /// Whether a close ended the session on purpose, so that reconnecting would undo it:
    /// 1000 (logout), 4403 (disconnected by the server API), 4409 (over `maxSessionsPerUser`:
    /// reconnecting would close another of the user's sessions), and 4401 (unauthorized or
    /// token expired) unless a token provider can supply a fresh token.
    public static func isFinal(_ info: CloseInfo, hasTokenProvider: Bool = false) -> Bool {
        guard info.closedByServer, let code = info.code else { return false }
        if code == 4401 { return !hasTokenProvider }
        return [1000, 4403, 4409].contains(code)
    }

    func setState(_ state: ConnectionState) {
        let changed = lock.withLock { () -> Bool in
            guard current != state, current != .closed else { return false }
            current = state
            return true
        }
        if changed { stateSink.yield(state) }
    }
}

/// Runs a closure at most once across threads; `run` returns whether this call ran it.
final class Once: @unchecked Sendable {
    let lock = NSLock()
    var done = false

    @discardableResult
    func run(_ body: () -> Void) -> Bool {
        let first = lock.withLock { () -> Bool in
            defer { done = true }
            return !done
        }
        if first { body() }
        return first
    }
}

extension RollcallSession {
    /// Cuts the current connection without a close frame, as a network failure would (the
    /// session then reconnects and resumes).
    @_spi(Testing)
    public func dropConnection() {
        lock.withLock { connection }?.drop()
    }
}
