import DequeModule
import RollcallProtocol

extension Broker {
    /// `login {userId, platform?, token?, customStatus?, presenceTimeout?, resumeToken?}`.
    func login(_ request: LoginRequest, on connection: ConnectionID) throws(BrokerError) -> JSON {
        let userId = request.userId
        let platform = request.platform
        let customStatus = request.customStatus
        let timeoutSeconds = request.presenceTimeoutSeconds
        let resumeToken = request.resumeToken

        let grant = try authenticateLogin(request)
        let requestedTimeoutMs = timeoutSeconds.map { min(300, max(5, $0)).milliseconds }

        if let resumeToken, let held = directory.heldSession(resumeToken: resumeToken), held.userId == userId {
            return resume(held, on: connection, grant: grant,
                          presenceTimeoutMs: requestedTimeoutMs ?? held.presenceTimeoutMs, customStatus: customStatus)
        }

        let timeoutMs = requestedTimeoutMs ?? configuration.presence.timeoutSeconds.milliseconds
        nextSessionNumber += 1
        let session = Session(
            number: nextSessionNumber, userId: userId, platform: platform,
            connection: connection, presenceTimeoutMs: timeoutMs, token: ResumeToken(using: &random),
            idPrefix: sessionIdPrefix)
        session.grant = grant
        directory.add(session)
        armTokenTimer(session)
        // The newcomer is in before the oldest goes, so the user never reads offline in between.
        closeOldestSessionsOverTheLimit(of: userId)
        loginDeadlines.cancel(connection)
        metrics.logins += 1
        userStatus.sessionStarted(session, customStatus: customStatus)
        return loginResult(session, resumed: false, channels: nil)
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

    func resume(_ session: Session, on connection: ConnectionID, grant: Grant, presenceTimeoutMs: Int64,
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
        // Cluster mode: what arrived before the hold was recorded is here, the rest in Redis
        // (handed over by the claim).
        var held = session.takeHeldMessages()
        session.messagesKeptInStore = false
        if let kept {
            held.events.append(contentsOf: kept.events)
            held.dropped += kept.dropped
        }
        let channels: [JSON]
        if clusterPresence != nil {
            // Cluster mode: the snapshots come from Redis after the reply, then the kept
            // messages (see `clusterLogin`).
            channels = session.presence.joined.keys.sorted().map(\.json)
            resumedMessages[session.number] = Array(held.events)
        } else {
            channels = presence.sessionResumed(session)
            for event in held.events { outbox.send(event, to: session) }
        }
        if let clusterUserStatus {
            clusterUserStatus.sessionResumed(session, customStatus: customStatus)
        } else {
            userStatus.sessionResumed(session, customStatus: customStatus)
        }
        return loginResult(session, resumed: true, channels: channels, messagesDropped: held.dropped)
    }

    func loginResult(_ session: Session, resumed: Bool, channels: [JSON]?, messagesDropped: Int? = nil) -> JSON {
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

    /// Closes the user's oldest sessions (4409), live or held, until the limit holds.
    private func closeOldestSessionsOverTheLimit(of userId: Name) {
        let sessions = directory.sessions(of: userId)
        let excess = sessions.count - configuration.limits.maxSessionsPerUser
        guard excess > 0 else { return }
        for oldest in sessions.prefix(excess) {
            let connection = oldest.connection
            end(oldest, .closed)
            if let connection { close(connection, .sessionLimit, reason: "too many sessions for this user") }
        }
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
        if clusterPresence != nil { clusterSessionHeld(session) }
        metrics.sessionEnds["held_\(cause.rawValue)", default: 0] += 1
    }

    /// Ends a session for good: presence first (leave/timeout events), then user status.
    /// Cluster mode: `recorded` runs once Redis has the end (``clusterSessionEnded(_:_:recorded:)``);
    /// on one node it is not called (everything is done on return).
    func end(_ session: Session, _ how: SessionEnd, recorded: (() -> Void)? = nil) {
        if let connection = session.connection {
            connections[connection] = nil
            tokenDeadlines.cancel(connection)
        }
        holdDeadlines.cancel(session.number)
        heldSessions[session.number] = nil
        if clusterPresence != nil {
            clusterSessionEnded(session, how, recorded: recorded)
        } else {
            presence.sessionEnded(session, how)
        }
        directory.remove(session)
        if let clusterUserStatus {
            // Cluster mode: the record follows in Redis (`endInCluster`; after a shutdown the
            // session is handed over, held, and the user stays online).
            clusterUserStatus.sessionLeftNode(session)
        } else {
            userStatus.sessionEnded(session, how)
        }
        metrics.sessionEnds["\(how)", default: 0] += 1
    }
}
