import RollcallProtocol

/// The broker's whole state and rules, with no I/O: the transport feeds it
/// ``InboundEvent``s and carries out the ``Action``s it returns.
///
/// One thread owns a broker (the transport's service thread); it is not thread-safe and
/// needs no locks. Time is read from the injected ``BrokerClock`` once per event.
public final class Broker {
    /// The configuration it runs with.
    public let configuration: Configuration
    package let clock: BrokerClock
    package let outbox: Outbox
    /// Logged-in sessions, live and held.
    public let directory = SessionDirectory()
    /// Channel presence (PROTOCOL §4).
    let presence: PresenceEngine
    /// User status and subscriptions (PROTOCOL §6).
    let userStatus: UserStatusEngine
    /// Checks login and refresh tokens; takes the key sets the transport hands in (``InboundEvent/keySet(_:_:)``).
    package internal(set) var authenticator: any LoginAuthenticator
    package var random: any RandomNumberGenerator

    package var connections: [ConnectionID: ConnectionState] = [:]
    var loginDeadlines = TimerQueue<ConnectionID>()
    var holdDeadlines = TimerQueue<UInt64>()
    /// Token notices and expiries of live sessions, by connection (``armTokenTimer(_:)``).
    var tokenDeadlines = TimerQueue<ConnectionID>()
    var heldSessions: [UInt64: Session] = [:]
    package var nextSessionNumber: UInt64 = 0
    /// Makes ``engines`` once the broker exists.
    private let makeEngines: EngineFactory
    /// The engines every op goes to: in memory on one node, on Redis in a cluster.
    package private(set) lazy var engines: BrokerEngines = makeEngines(self)
    /// Channel presence (PROTOCOL §4), as ``engines`` keeps it.
    var channelPresence: any ChannelPresence { engines.presence }
    /// User status (PROTOCOL §6), as ``engines`` keeps it.
    var userStatuses: any UserStatuses { engines.userStatuses }
    /// Sessions and the node's life, as ``engines`` keeps them.
    var sessions: any SessionEngine { engines.sessions }
    /// What waits for each store call's replies (the Redis engine's calls).
    var storeCalls: [StoreTicket: (Result<[StoreReply], StoreFailure>) -> Void] = [:]
    var nextStoreTicket: UInt64 = 0
    /// Prefix of every session id (cluster mode: the node id and a dot, so ids are unique in the cluster).
    let sessionIdPrefix: String
    /// Counters for `/metrics`.
    package var metrics = BrokerMetrics()
    /// This node's id: in the server API's `getInfo` (PROTOCOL §10) and, in cluster mode, in
    /// Redis and in session ids. Default `standalone`.
    public let nodeId: String
    /// Where request times and fan-out sizes go (histograms in `/metrics`); nil: nowhere.
    public var instrumentation: (any BrokerInstrumentation)? {
        didSet { outbox.instrumentation = instrumentation }
    }

    /// A broker with the given configuration, clock, durable store and authenticator, on the
    /// in-memory engines (one node).
    public convenience init(
        configuration: Configuration,
        clock: BrokerClock = SystemClock(),
        store: any StatusStore = MemoryStatusStore(),
        authenticator: (any LoginAuthenticator)? = nil,
        random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
        nodeId: String? = nil
    ) {
        precondition(!configuration.cluster.isEnabled, "cluster mode runs on the Redis engine: BrokerEngines.onRedis")
        self.init(configuration: configuration, clock: clock, store: store, authenticator: authenticator, random: random,
                  nodeId: nodeId, engines: BrokerEngines.inMemory)
    }

    /// A broker on the engines `engines` makes: ``BrokerEngines/inMemory(_:)`` on one node, the
    /// Redis engine's in a cluster (`RollcallRedisEngine`).
    package init(
        configuration: Configuration,
        clock: BrokerClock = SystemClock(),
        store: any StatusStore = MemoryStatusStore(),
        authenticator: (any LoginAuthenticator)? = nil,
        random: any RandomNumberGenerator = SystemRandomNumberGenerator(),
        nodeId: String? = nil,
        engines: @escaping EngineFactory
    ) {
        self.configuration = configuration
        self.nodeId = nodeId ?? Broker.standaloneNodeId
        self.sessionIdPrefix = configuration.cluster.isEnabled ? (nodeId ?? Broker.standaloneNodeId) + "." : ""
        self.clock = clock
        self.random = random
        self.authenticator = authenticator ?? OpenAuthenticator()
        let webhooks = configuration.webhooks
        self.outbox = Outbox(backendKinds: webhooks.isEnabled ? webhooks.eventKinds : [])
        self.presence = PresenceEngine(configuration: configuration, clock: clock, outbox: outbox)
        self.userStatus = UserStatusEngine(
            configuration: configuration, clock: clock, outbox: outbox, directory: directory, store: store)
        self.makeEngines = engines
        _ = self.engines
    }

    /// Handles one event and returns what the transport must do, in order.
    public func handle(_ event: InboundEvent) -> [Action] {
        switch event {
        case .opened(let connection):
            connectionOpened(connection)
        case .received(let connection, let bytes):
            handleReceived(bytes, on: connection)
        case .ended(let connection, let how):
            connectionEnded(connection, how: how)
        case .tick:
            fireDueTimers()
        case .shutdown:
            shutdown()
        case .storeReplied(let ticket, let result):
            storeCalls.removeValue(forKey: ticket)?(result)
        case .storeMessage(let channel, let payload):
            sessions.storeMessageArrived(channel: channel, payload: payload)
        case .storeResubscribed:
            sessions.storeResubscribed()
        case .storeListening(let channels):
            sessions.storeListening(channels)
        case .storeBeat(let beat):
            sessions.storeBeat(beat)
        case .keySet(let source, let set):
            authenticator.useKeySet(set, from: source)
        case .storeLost:
            sessions.storeLostData()
        case .storeFenced:
            sessions.nodeFenced()
        case .api(let id, let op, let body):
            serverAPIRequest(id, op: op, body: body)
        }
        return outbox.drain()
    }

    /// The earliest moment something is due, in monotonic milliseconds of the injected clock
    /// (compare with ``monotonicNow``); the transport sends `.tick` then.
    public var nextDeadline: Timestamp? {
        [loginDeadlines.nextDeadline(), holdDeadlines.nextDeadline(), tokenDeadlines.nextDeadline(),
         presence.nextDeadline, userStatus.nextDeadline, sessions.nextDeadline]
            .compactMap { $0 }.min()
    }

    /// How the durable store's writes are doing (`/healthz`, `/metrics`).
    public var storageHealth: StorageHealth { userStatus.store.health }

    /// Wall time from the injected clock (for timestamps only).
    public var now: Timestamp { clock.now }

    /// Monotonic time from the injected clock: what ``nextDeadline`` is measured against.
    public var monotonicNow: Timestamp { clock.monotonic }

    // MARK: - Connections

    private func connectionOpened(_ connection: ConnectionID) {
        let now = clock.monotonic
        connections[connection] = ConnectionState(requests: TokenBucket(capacity: Double(configuration.limits.requestBurst), now: now))
        loginDeadlines.schedule(connection, at: now + configuration.limits.loginTimeoutSeconds.milliseconds)
        metrics.connectionsOpened += 1
    }

    private func connectionEnded(_ connection: ConnectionID, how: ConnectionEnd) {
        guard connections.removeValue(forKey: connection) != nil else { return }
        loginDeadlines.cancel(connection)
        guard let session = directory.session(on: connection) else { return }
        switch how {
        case .closeFrame:
            end(session, .closed)
        case .abnormal(let cause):
            hold(session, cause: cause)
        }
    }

    /// Closes a connection the broker decided to end, forgetting it first.
    package func close(_ connection: ConnectionID, _ code: CloseCode, reason: String) {
        connections[connection] = nil
        loginDeadlines.cancel(connection)
        outbox.close(connection, code, reason: reason)
    }

    // MARK: - Requests

    func handleReceived(_ bytes: [UInt8], on connection: ConnectionID) {
        guard var state = connections[connection] else { return }
        if state.awaitsStore {
            // Cluster mode: a request waits for Redis; this one is answered after it, in order.
            guard state.queued.count < configuration.limits.requestBurst else {
                let id = (try? Request.decode(bytes).get().id) ?? .null
                reply(to: connection, id: id, .failure(BrokerError(.rateLimited, "too many requests waiting", retryAfterMs: 100)),
                      at: outbox.actions.count)
                return
            }
            state.queued.append(bytes)
            connections[connection] = state
            return
        }
        metrics.requests += 1
        let started = instrumentation == nil ? 0 : clock.monotonicNanoseconds
        var label = RequestLabel.invalid
        defer {
            if let instrumentation {
                instrumentation.requestHandled(label, nanoseconds: clock.monotonicNanoseconds &- started)
            }
        }
        let mark = outbox.actions.count
        // Every frame costs a token, decodable or not, so a flood of garbage is limited too.
        let admitted = state.requests.take(
            now: clock.monotonic, capacity: Double(configuration.limits.requestBurst),
            ratePerSecond: configuration.limits.requestsPerSecond)
        connections[connection] = state
        let request: Request
        switch Request.decode(bytes) {
        case .success(let decoded):
            request = decoded
        case .failure(let failure):
            if case .failure(let retry) = admitted {
                reply(to: connection, id: failure.id, .failure(.rateLimited("too many requests", retry)), at: mark)
            } else {
                reply(to: connection, id: failure.id, .failure(failure.error), at: mark)
            }
            return
        }
        label = request.op.map(RequestLabel.op) ?? .unknown
        if case .failure(let retry) = admitted {
            reply(to: connection, id: request.id, .failure(.rateLimited("too many requests", retry)), at: mark)
            return
        }
        let outcome: Result<JSON, BrokerError>
        do throws(BrokerError) {
            guard let result = try dispatch(request, on: connection) else {
                connections[connection]?.awaitsStore = true
                return
            }
            outcome = .success(result)
        } catch {
            outcome = .failure(error)
        }
        reply(to: connection, id: request.id, outcome, at: mark)
        switch (request.op, outcome) {
        case (.login, .success):
            if let session = directory.session(on: connection) { sessions.loggedIn(session) {} }
        case (.logout, .success):
            close(connection, .logout, reason: "logout")
        case (.login, .failure(let error)) where error.code == .unauthorized:
            close(connection, .unauthorized, reason: "unauthorized")
        default:
            break
        }
    }

    func reply(to connection: ConnectionID, id: JSON, _ outcome: Result<JSON, BrokerError>, at position: Int) {
        let bytes: [UInt8]
        switch outcome {
        case .success(let result):
            bytes = Frames.success(id: id, result: result)
        case .failure(let error):
            metrics.errors[error.code, default: 0] += 1
            bytes = Frames.failure(id: id, code: error.code, message: error.message, retryAfterMs: error.retryAfterMs)
        }
        outbox.insert(.send(connection, bytes, .reply), at: position)
    }

    /// The request's result, or nil when it waits for an engine's store (the reply follows
    /// from ``answerDeferred(_:on:)``). One switch for one node and a cluster: every op that
    /// reads or changes shared state goes to an engine (``ChannelPresence``, ``UserStatuses``)
    /// once its request is decoded and checked.
    private func dispatch(_ request: Request, on connection: ConnectionID) throws(BrokerError) -> JSON? {
        let session = directory.session(on: connection)
        if request.op == .login {
            guard session == nil else { throw BrokerError(.alreadyLoggedIn, "this connection is already logged in") }
            return try login(LoginRequest(request), on: connection, id: request.id)
        }
        guard let session else {
            throw BrokerError(.notLoggedIn, "the first request must be login")
        }
        guard let op = request.op else {
            throw BrokerError(.unknownOp, "unknown op \"\(request.opName)\"")
        }
        let limits = configuration.state
        let grant = session.grant
        switch op {
        case .login:
            preconditionFailure("handled above")
        case .logout:
            // The connection stays known (its later frames wait in its queue) until the answer.
            let state = connections[connection]
            let result = try answer(request, on: connection) { done in
                sessions.logout(session) { done(.success(EngineAnswer(result: [:]))) }
            }
            if result == nil { connections[connection] = state }
            return result
        case .ping:
            return ["serverTime": .number(JSONNumber(Int(clock.now)))]
        case .refresh:
            guard authenticator.checksTokens else {
                throw BrokerError(.invalidRequest, "refresh needs auth.mode jwt; this broker does not check tokens")
            }
            return try refresh(RefreshRequest(request), from: session)
        case .join:
            let decoded = try JoinRequest(request, limits: limits)
            try checkJoinAllowed(decoded, from: session)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try channelPresence.join(decoded, from: session, grant: grant, then: done)
            }
        case .leave:
            let decoded = try LeaveRequest(request)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try channelPresence.leave(decoded, from: session, then: done)
            }
        case .publish:
            let decoded = try PublishRequest(request)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try channelPresence.publish(decoded, from: session, grant: grant, then: done)
            }
        case .setState:
            let decoded = try SetStateRequest(request, limits: limits)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try channelPresence.setState(decoded, from: session, grant: grant, then: done)
            }
        case .removeState:
            let decoded = try RemoveStateRequest(request)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try channelPresence.removeState(decoded, from: session, then: done)
            }
        case .getState:
            let decoded = try readableGetState(request, by: session)
            return try answer(request, on: connection) { done in channelPresence.getState(decoded, then: done) }
        case .getOnlineUsers:
            let decoded = try readableGetOnlineUsers(request, by: session)
            return try answer(request, on: connection) { done in channelPresence.getOnlineUsers(decoded, then: done) }
        case .getUserChannels:
            let decoded = try readableGetUserChannels(request, by: session)
            return try answer(request, on: connection) { done in
                channelPresence.getUserChannels(decoded, allowing: grant, then: done)
            }
        case .setCustomStatus:
            let decoded = try SetCustomStatusRequest(request)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try userStatuses.setCustomStatus(decoded, from: session, then: done)
            }
        case .getUserStatus:
            let decoded = try readableGetUserStatus(request, by: session)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try userStatuses.getUserStatus(decoded, from: session, then: done)
            }
        case .subscribeUserStatus:
            let decoded = try readableSubscribe(request, by: session)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try userStatuses.subscribe(decoded, from: session, then: done)
            }
        case .unsubscribeUserStatus:
            let decoded = try UnsubscribeUserStatusRequest(request)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try userStatuses.unsubscribe(decoded, from: session, then: done)
            }
        case .getSubscriptions:
            let decoded = try GetSubscriptionsRequest(request)
            return try answer(request, on: connection) { done throws(BrokerError) in
                try userStatuses.getSubscriptions(decoded, from: session, then: done)
            }
        }
    }

    // MARK: - Timers

    private func fireDueTimers() {
        let now = clock.monotonic
        for connection in loginDeadlines.popDue(now: now) where directory.session(on: connection) == nil {
            guard connections[connection] != nil else { continue }
            close(connection, .loginTimeout, reason: "login timeout")
        }
        for number in holdDeadlines.popDue(now: now) {
            guard let session = heldSessions[number] else { continue }
            end(session, .timedOut)
        }
        fireDueTokenTimers()
        presence.fireDueTimers()
        sessions.fireDueTimers()
        userStatus.fireDueTimers()
    }

    // MARK: - Shutdown

    private func shutdown() {
        let open = connections.keys.sorted()
        for session in directory.all {
            end(session, .shutdown)
        }
        sessions.shutDown()
        for connection in open {
            close(connection, .shutdown, reason: "shutdown")
        }
        userStatus.shutdown()
    }
}

/// Per-connection bookkeeping, before and after login.
///
/// One per connection in a hash table that is at most 3/4 full: kept to 25 bytes (stride 32;
/// it was 56 with the opening time, unused, and the bucket's constant capacity and rate).
package struct ConnectionState {
    /// Requests admitted: `limits.requestBurst` refilled at `limits.requestsPerSecond`.
    var requests: TokenBucket
    /// Cluster mode: frames received meanwhile, handled in order once it is answered.
    var queued: [[UInt8]] = []
    /// Cluster mode: a request of this connection waits for the store.
    var awaitsStore = false
}

/// Counters the core keeps for `/metrics`.
package struct BrokerMetrics: Sendable {
    /// Connections ever opened.
    var connectionsOpened = 0
    /// Requests received (decodable or not).
    package var requests = 0
    /// Server API requests handed in by the transport (key already checked).
    package var apiRequests = 0
    /// Successful logins (including resumes).
    package var logins = 0
    /// Sessions resumed with a token.
    package var resumes = 0
    /// Error replies by code.
    package var errors: [ErrorCode: Int] = [:]
    /// Sessions ended, by how.
    package var sessionEnds: [String: Int] = [:]
    /// Successful `refresh` requests (1.1).
    package var refreshes = 0
    /// Sessions closed because their token expired (1.1).
    package var tokenExpiries = 0
    /// Logins refused for their token, by reason (``TokenRefusal/reason``, 1.2).
    package var loginRefusals: [String: Int] = [:]
    /// `refresh` requests refused for their token, by reason (1.2).
    package var refreshRefusals: [String: Int] = [:]
    /// Cluster mode: session ends another node began and did not finish (it died between
    /// `session.end` and `status.ended`), finished by this node's reaper.
    package var clusterEndsFinished = 0
    /// Cluster mode: steps on a user's key group that follow a leave (its indexes, docs/cluster.md
    /// step 1) that Redis did not answer, each sent again at the next reaper tick.
    package var clusterUserStepsUnanswered = 0
    /// Cluster mode: `presence.refence` calls (a hold's or an orphaning's fence copies, docs/cluster.md
    /// step 1) that Redis did not answer, each sent again at the next reaper tick.
    package var clusterRefencesUnanswered = 0
    /// Cluster mode: catch-ups of other users' records (a login's or a resume's, read per key
    /// group) given up after Redis left every attempt unanswered: the session got none.
    package var clusterCatchUpsLost = 0
    /// Cluster mode: message events that arrived a second time with the same number and
    /// publishing session (a publish run on a stale master and again on the new one), dropped.
    package var clusterRepeatedMessagesDropped = 0
    /// Cluster mode: local sessions whose record Redis no longer gave this node (gone, or
    /// another node's or none) while the node was live, found after a fenced answer, and ended here.
    package var clusterSessionsLostByNode = 0
    /// Sessions this node had whose record Redis no longer had (at a refused change, or after a
    /// fence once the node was back; a failover may have lost it): their channels left with
    /// `timeout` (``ClusterSessions/endLostRecord(_:)``).
    package var clusterLostRecordsEnded = 0
    /// Cluster mode: presence events that came with the `seq` this node delivered last but
    /// other bytes (Redis went back in time and used the number again); each channel resynced.
    package var clusterEventsRewritten = 0
}
