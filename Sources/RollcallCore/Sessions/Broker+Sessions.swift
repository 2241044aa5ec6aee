import DequeModule
import RollcallProtocol

extension Broker {
    /// `login {userId, platform?, token?, customStatus?, presenceTimeout?, resumeToken?}`: checked
    /// here, then the session engine resumes or starts the session. The result, or nil when
    /// the engine waits for its store (the reply follows from ``loginAnswered(on:id:)``).
    func login(_ request: LoginRequest, on connection: ConnectionID, id: JSON) throws(BrokerError) -> JSON? {
        let grant = try authenticateLogin(request)
        var immediate: Result<JSON, BrokerError>?
        var returned = false
        let deferred = loginAnswered(on: connection, id: id)
        sessions.login(request, grant: grant, on: connection) { outcome, session in
            if returned { deferred(outcome, session) } else { immediate = outcome }
        }
        returned = true
        return try immediate?.get()
    }

    /// The presence timeout a login asks for, in the range PROTOCOL §3 allows.
    package static func presenceTimeoutMs(_ seconds: Double) -> Int64 { min(300, max(5, seconds)).milliseconds }

    /// A new session for a login on `connection`, not yet in the directory.
    package func newSession(_ request: LoginRequest, on connection: ConnectionID, grant: Grant, timeoutMs: Int64?,
                    token: ResumeToken? = nil) -> Session {
        nextSessionNumber += 1
        let session = Session(
            number: nextSessionNumber, userId: request.userId, platform: request.platform,
            connection: connection, presenceTimeoutMs: timeoutMs ?? configuration.presence.timeoutSeconds.milliseconds,
            token: token ?? ResumeToken(using: &random), idPrefix: sessionIdPrefix)
        session.grant = grant
        return session
    }

    /// A new session in the directory is logged in on `connection`: its token timer runs, the
    /// login deadline goes.
    package func admit(_ session: Session, on connection: ConnectionID) {
        armTokenTimer(session)
        loginDeadlines.cancel(connection)
        metrics.logins += 1
    }

    /// One of the user's sessions over `maxSessionsPerUser`, on this node: ends, closing 4409.
    package func closeOverTheLimit(_ session: Session) {
        let connection = session.connection
        end(session, .closed)
        if let connection { close(connection, .sessionLimit, reason: "too many sessions for this user") }
    }

    /// The server API's `disconnectUser` for one session of this node: as `logout`, closing 4403.
    /// `recorded` runs once the store has the end (``end(_:_:recorded:)``).
    package func disconnect(_ session: Session, reason: String, recorded: (() -> Void)? = nil) {
        let connection = session.connection
        end(session, .logout, recorded: recorded)
        if let connection { close(connection, .disconnectedByServer, reason: reason) }
    }

    /// The answer to a login the engine completed later: the reply, then what follows it, or
    /// close 4401 after `UNAUTHORIZED`; then the requests that waited behind it.
    private func loginAnswered(on connection: ConnectionID, id: JSON) -> (Result<JSON, BrokerError>, Session?) -> Void {
        { [self] outcome, session in
            guard connections[connection] != nil else { return }
            reply(to: connection, id: id, outcome, at: outbox.actions.count)
            if case .failure(let error) = outcome, error.code == .unauthorized {
                close(connection, .unauthorized, reason: "unauthorized")
                return
            }
            guard case .success = outcome, let session else {
                resumeQueuedRequests(on: connection)
                return
            }
            sessions.loggedIn(session) { [self] in resumeQueuedRequests(on: connection) }
        }
    }

    /// Checks the login's custom status and token; the grant the token gives.
    func authenticateLogin(_ request: LoginRequest) throws(BrokerError) -> Grant {
        if let customStatus = request.customStatus { try userStatus.validateCustomStatus(customStatus) }
        switch authenticator.check(userId: request.userId, token: request.token, now: clock.now) {
        case .success(let granted): return granted
        case .failure(let refusal):
            metrics.loginRefusals[refusal.reason, default: 0] += 1
            throw refusal.error
        }
    }

    package func resume(_ session: Session, on connection: ConnectionID, grant: Grant, presenceTimeoutMs: Int64,
                customStatus: String?, token: ResumeToken? = nil, kept: (events: [[UInt8]], dropped: Int)? = nil) -> JSON {
        holdDeadlines.cancel(session.number)
        heldSessions[session.number] = nil
        directory.attach(session, to: connection, newToken: token ?? ResumeToken(using: &random))
        session.presenceTimeoutMs = presenceTimeoutMs
        session.grant = grant
        session.refreshNoticeSent = false
        armTokenTimer(session)
        loginDeadlines.cancel(connection)
        metrics.logins += 1
        metrics.resumes += 1
        // The messages kept while it was held go right after the snapshots, in order.
        // Cluster mode: what arrived before the hold was recorded and was not handed to Redis
        // yet is here, the rest in Redis (handed over by the claim).
        var held = session.takeHeldMessages()
        if let kept {
            held.events.append(contentsOf: kept.events)
            held.dropped += kept.dropped
        }
        let channels = sessions.resumed(session, kept: Array(held.events))
        userStatuses.sessionResumed(session, customStatus: customStatus)
        return loginResult(session, resumed: true, channels: channels, messagesDropped: held.dropped)
    }

    package func loginResult(_ session: Session, resumed: Bool, channels: [JSON]?, messagesDropped: Int? = nil) -> JSON {
        let limits = configuration.limits
        let state = configuration.state
        var limitMembers: [(key: String, value: JSON)] = []
        limitMembers.append(("maxFrameBytes", .int(limits.maxFrameBytes)))
        limitMembers.append(("maxMessageBytes", .int(limits.maxMessageBytes)))
        limitMembers.append(("maxBatchBytes", .int(limits.maxBatchBytes)))
        limitMembers.append(("maxChannelsPerSession", .int(limits.maxChannelsPerSession)))
        limitMembers.append(("maxSessionsPerUser", .int(limits.maxSessionsPerUser)))
        limitMembers.append(("requestsPerSecond", .number(JSONNumber(limits.requestsPerSecond))))
        limitMembers.append(("requestBurst", .int(limits.requestBurst)))
        limitMembers.append(("maxStateKeys", .int(state.maxKeys)))
        limitMembers.append(("maxStateKeyBytes", .int(state.maxKeyBytes)))
        limitMembers.append(("maxStateValueBytes", .int(state.maxValueBytes)))
        limitMembers.append(("maxStateTotalBytes", .int(state.maxTotalBytes)))
        limitMembers.append(("maxPendingChannels", .int(state.maxPendingChannels)))
        limitMembers.append(("customStatusMaxBytes", .int(configuration.userStatus.customStatusMaxBytes)))
        limitMembers.append(("heartbeatIntervalSeconds", .number(JSONNumber(configuration.heartbeat.intervalSeconds))))
        limitMembers.append(("heartbeatTimeoutSeconds", .number(JSONNumber(configuration.heartbeat.timeoutSeconds))))
        var result = JSONObject()
        result["userId"] = .string(session.userId.string)
        result["platform"] = .string(session.platform.rawValue)
        result["sessionId"] = .string(session.sessionId)
        result["resumeToken"] = .string(session.resumeToken)
        result["serverTime"] = .int(Int(clock.now))
        result["resumed"] = .bool(resumed)
        result["presenceTimeout"] = .number(JSONNumber(Double(session.presenceTimeoutMs) / 1000))
        result["limits"] = .object(JSONObject(limitMembers))
        if let channels { result["channels"] = .array(channels) }
        if let messagesDropped { result["messagesDropped"] = .int(messagesDropped) }
        result["expiresAt"] = session.grant.expiresAt.map { .int(Int($0)) } ?? .null
        return .object(result)
    }

    /// What the session's token allows.
    func grant(of session: Session) -> Grant { session.grant }

    /// An abnormal drop: keep the session for its presence timeout, resumable.
    func hold(_ session: Session, cause: AbnormalCause) {
        disarmTokenTimer(session)
        directory.detach(session)
        session.heldSince = clock.now
        heldSessions[session.number] = session
        holdDeadlines.schedule(session.number, at: clock.monotonic + session.presenceTimeoutMs)
        sessions.held(session)
        metrics.sessionEnds["held_\(cause.rawValue)", default: 0] += 1
    }

    /// Forgets a session of this node without ending it anywhere else (it lives on in the
    /// store, or the store lost it).
    package func forget(_ session: Session) {
        holdDeadlines.cancel(session.number)
        heldSessions[session.number] = nil
        directory.remove(session)
    }

    /// Ends a session for good: presence first (leave/timeout events), then user status.
    /// `recorded` runs once the store has the end (``SessionEngine/ended(_:_:recorded:)``); on
    /// one node it is not called (everything is done on return).
    package func end(_ session: Session, _ how: SessionEnd, recorded: (() -> Void)? = nil) {
        if let connection = session.connection {
            connections[connection] = nil
            tokenDeadlines.cancel(connection)
        }
        holdDeadlines.cancel(session.number)
        heldSessions[session.number] = nil
        sessions.ended(session, how, recorded: recorded)
        directory.remove(session)
        userStatuses.sessionEnded(session, how)
        metrics.sessionEnds["\(how)", default: 0] += 1
    }
}
