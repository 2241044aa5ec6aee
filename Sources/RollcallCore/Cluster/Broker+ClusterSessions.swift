import Crypto
import RollcallProtocol

/// Sessions in cluster mode (PROTOCOL §9; ``SessionScripts``): every session is recorded in
/// Redis, so `maxSessionsPerUser` holds across nodes, a held session resumes on any node,
/// a dead node's sessions are held and then time out, and SIGTERM hands sessions over.
/// The connection itself, its rate limits and its timers stay on the node it is on.
extension Broker {
    /// This node's control channel (``ControlMessage``).
    var controlChannel: String { clusterKeys.prefix + "n:" + nodeId }

    var clusterKeys: ClusterKeys { clusterPresence!.keys }

    /// The hash a resume token is known by in Redis (the token itself never leaves the node).
    static func tokenHash(_ token: ResumeToken) -> String {
        SHA256.hash(data: Array(token.text.utf8)).prefix(16).map { byte in
            (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }

    // MARK: - Login

    /// `login` in cluster mode: a resume by token on any node, else a new session recorded in
    /// Redis (closing the user's oldest sessions over the limit, on whichever node).
    func clusterLogin(_ request: LoginRequest, on connection: ConnectionID, id: JSON) throws(BrokerError) {
        let grant = try authenticateLogin(request)
        let requestedTimeoutMs = request.presenceTimeoutSeconds.map { min(300, max(5, $0)).milliseconds }
        let newToken = ResumeToken(using: &random)
        let answer = loginAnswer(on: connection, id: id)
        guard let resumeText = request.resumeToken, let oldToken = ResumeToken(resumeText) else {
            startClusterSession(request, on: connection, grant: grant, timeoutMs: requestedTimeoutMs, token: newToken, then: answer)
            return
        }
        // A node silent for 2.5 heartbeats has stopped (or is cut off): its live sessions resume too.
        let staleMs = (configuration.cluster.heartbeatSeconds * 2.5).milliseconds
        let arguments = [clusterKeys.prefix, Self.tokenHash(oldToken), request.userId.string, nodeId, Self.tokenHash(newToken),
                         String(staleMs)]
        call([.script(SessionScripts.claim, arguments: arguments.map(storeArgument))]) { [self] result in
            switch result {
            case .failure(let failure):
                answer(.failure(failure.brokerError), nil)
            case .success(let replies):
                let reply = ClaimScriptReply(replies.first ?? .null)
                guard let sessionId = reply.sessionId else {
                    startClusterSession(request, on: connection, grant: grant, timeoutMs: requestedTimeoutMs, token: newToken, then: answer)
                    return
                }
                guard connections[connection] != nil else {
                    // The client went away meanwhile: the session goes back to being held.
                    call([.script(SessionScripts.release, arguments: [clusterKeys.prefix, sessionId, nodeId].map(storeArgument))]) { _ in }
                    return
                }
                let timeoutMs = requestedTimeoutMs ?? (reply.presenceTimeoutMs ?? configuration.presence.timeoutSeconds.milliseconds)
                let kept = (events: reply.keptEvents, dropped: reply.dropped)
                if let local = directory.session(id: sessionId), local.isHeld {
                    answer(.success(resume(local, on: connection, grant: grant, presenceTimeoutMs: timeoutMs,
                                           customStatus: request.customStatus, token: newToken, kept: kept)), local)
                    return
                }
                let session = adoptSession(sessionId, user: request.userId, platform: reply.platform,
                                           on: connection, timeoutMs: timeoutMs, token: newToken, grant: grant)
                clusterPresence!.adopt(session, channels: reply.channels)
                answer(.success(resume(session, on: connection, grant: grant, presenceTimeoutMs: timeoutMs,
                                       customStatus: request.customStatus, token: newToken, kept: kept)), session)
            }
        }
    }

    /// A session another node held (or a dead node left), now on this connection.
    private func adoptSession(_ sessionId: String, user: Name, platform: Platform, on connection: ConnectionID, timeoutMs: Int64,
                              token: ResumeToken, grant: Grant) -> Session {
        nextSessionNumber += 1
        let session = Session(number: nextSessionNumber, userId: user, platform: platform,
                              connection: connection, presenceTimeoutMs: timeoutMs, token: token,
                              sessionId: sessionId)
        session.grant = grant
        directory.add(session)
        return session
    }

    /// A new session: recorded in Redis, then the user's oldest sessions over the limit end
    /// with 4409 wherever they are, then the login answers.
    private func startClusterSession(_ request: LoginRequest, on connection: ConnectionID, grant: Grant, timeoutMs: Int64?,
                                     token: ResumeToken, then answer: @escaping (Result<JSON, BrokerError>, Session?) -> Void) {
        guard connections[connection] != nil else { return }
        let timeoutMs = timeoutMs ?? configuration.presence.timeoutSeconds.milliseconds
        nextSessionNumber += 1
        let session = Session(
            number: nextSessionNumber, userId: request.userId, platform: request.platform,
            connection: connection, presenceTimeoutMs: timeoutMs, token: token, idPrefix: sessionIdPrefix)
        session.grant = grant
        let arguments = [
            clusterKeys.prefix, session.sessionId, request.userId.string, request.platform.rawValue, nodeId,
            String(timeoutMs), Self.tokenHash(token), String(configuration.limits.maxSessionsPerUser),
        ]
        // The user's inbox is heard before the session exists, so no event of it is missed.
        clusterUserStatus!.hearInbox(of: request.userId)
        call([.script(SessionScripts.start, arguments: arguments.map(storeArgument)),
              clusterUserStatus!.startedCommand(session, customStatus: request.customStatus)]) { [self] result in
            switch result {
            case .failure(let failure):
                clusterUserStatus!.stopHearingIfUnused(request.userId)
                answer(.failure(failure.brokerError), nil)
            case .success(let replies):
                guard connections[connection] != nil else {
                    clusterUserStatus!.stopHearingIfUnused(request.userId)
                    endInCluster(sessionId: session.sessionId, user: session.userId, channels: [], kind: .leave)
                    return
                }
                directory.add(session)
                armTokenTimer(session)
                loginDeadlines.cancel(connection)
                metrics.logins += 1
                clusterUserStatus!.sessionStarted(session, reply: replies.count > 1 ? replies[1] : .null)
                let excess = replies.first?.elements ?? []
                var index = 0
                while index + 1 < excess.count {
                    endOverTheLimit(excess[index].text ?? "", node: excess[index + 1].text ?? "")
                    index += 2
                }
                answer(.success(loginResult(session, resumed: false, channels: nil)), session)
            }
        }
    }

    /// One of a user's sessions over `maxSessionsPerUser`: closed with 4409 by the node that
    /// has it, or ended here when no node has it (held after its node stopped).
    private func endOverTheLimit(_ sessionId: String, node: String) {
        if node == nodeId {
            guard let session = directory.session(id: sessionId) else { return }
            let connection = session.connection
            end(session, .closed)
            if let connection { close(connection, .sessionLimit, reason: "too many sessions for this user") }
        } else if !node.isEmpty {
            tell(node: node, .end(sessionId: sessionId, code: .sessionLimit, reason: nil))
        } else {
            endRemotely(sessionId)
        }
    }

    /// Ends a session no node has: its record, then its channels (`leave`).
    func endRemotely(_ sessionId: String, loggedOut: Bool = false) {
        call([.command(["HGET", clusterKeys.prefix + "s:" + sessionId, "user"].map(storeArgument)),
              .command(["SMEMBERS", clusterKeys.sessionChannels(sessionId)].map(storeArgument))]) { [self] result in
            guard case .success(let replies) = result, let user = replies.first?.text else { return }
            let channels = ClusterKeys.channels(fromIds: replies.last)
            endInCluster(sessionId: sessionId, user: Name(unchecked: user), channels: channels, kind: .leave, node: "",
                         loggedOut: loggedOut)
        }
    }

    /// The answer to a deferred login: the reply, then the catch-up, or close 4401 after `UNAUTHORIZED`.
    private func loginAnswer(on connection: ConnectionID, id: JSON) -> (Result<JSON, BrokerError>, Session?) -> Void {
        { [self] outcome, session in
            guard connections[connection] != nil else { return }
            reply(to: connection, id: id, outcome, at: outbox.actions.count)
            if case .failure(let error) = outcome, error.code == .unauthorized {
                close(connection, .unauthorized, reason: "unauthorized")
                return
            }
            if case .success = outcome, let session {
                clusterUserStatus!.sessionLoggedIn(session)
                if let held = resumedMessages.removeValue(forKey: session.number) {
                    // A resume: fresh snapshots from Redis, then the kept messages, then the queue.
                    _ = clusterPresence!.sessionResumed(session) { [self] in
                        for event in held { outbox.send(event, to: session) }
                        resumeQueuedRequests(on: connection)
                    }
                    return
                }
            }
            resumeQueuedRequests(on: connection)
        }
    }

    // MARK: - Ends, holds, hand-over

    /// A local session ended for good: its record in Redis (only if this node still owns
    /// it), then its channels. `recorded` runs once Redis has the end (see ``endInCluster``).
    func clusterSessionEnded(_ session: Session, _ how: SessionEnd, recorded: (() -> Void)? = nil) {
        let channels = clusterPresence!.forgetLocally(session)
        switch how {
        case .shutdown:
            // The node hands every session over at once (``handOverSessions()``).
            recorded?()
        case .timedOut:
            endInCluster(sessionId: session.sessionId, user: session.userId, channels: channels, kind: .timeout, recorded: recorded)
        case .logout, .closed:
            endInCluster(sessionId: session.sessionId, user: session.userId, channels: channels, kind: .leave,
                         loggedOut: how == .logout, recorded: recorded)
        }
    }

    /// Ends a session's record in Redis (owned by `node`) and, if that succeeded, leaves its
    /// channels, then the user's status follows (`loggedOut` after a logout of the last session).
    /// `recorded` runs once `status.ended` answered (the user's record is stamped), or when
    /// there is nothing more to wait for: the session was not this node's, or Redis was out of
    /// reach and the end waits for the reaper's retry.
    /// `retried`: a second try after Redis did not answer the first, which may have run all the
    /// same (its answer lost): then `session.end` says `gone`, and the channels are left and the
    /// record follows as after `ok`. `moved` (taken over by another node): only the record
    /// follows (`status.ended` changes nothing while the session exists).
    func endInCluster(sessionId: String, user: Name, channels: [ChannelKey], kind: RemovalKind, node: String? = nil,
                      loggedOut: Bool = false, retried: Bool = false, recorded: (() -> Void)? = nil) {
        let arguments = [clusterKeys.prefix, sessionId, node ?? nodeId, kind == .timeout ? "t" : "l", loggedOut ? "logout" : "closed"]
        call([.script(SessionScripts.end, arguments: arguments.map(storeArgument))]) { [self] result in
            guard case .success(let replies) = result else {
                // Redis was out of reach: the end is tried again at the next reaper tick, so the
                // session does not stay a member everywhere.
                unfinishedEnds.append { [self] in
                    endInCluster(sessionId: sessionId, user: user, channels: channels, kind: kind, node: node, loggedOut: loggedOut,
                                 retried: true)
                }
                recorded?()
                return
            }
            // A retry that finds the record gone: the first try ran but its answer was lost (Redis
            // stopped, then ran the queued script), so the channels were never left. Leaving is
            // per session and idempotent (`notin`), so leave them now. `moved`: taken over
            // elsewhere, its memberships live on.
            let outcome = replies.first?.text
            guard outcome == "ok" || (retried && outcome == "gone") else {
                if retried {
                    clusterUserStatus!.sendEnds([clusterUserStatus!.endedCommand(user: user, sessionId: sessionId, loggedOut: loggedOut)],
                                                then: recorded)
                } else {
                    recorded?()
                }
                return
            }
            clusterPresence!.leave(sessionId: sessionId, user: user, channels: channels, kind: kind)
            // Presence first, then user status (as one node): commands run in order.
            clusterUserStatus!.sendEnds([clusterUserStatus!.endedCommand(user: user, sessionId: sessionId, loggedOut: loggedOut)],
                                        then: recorded)
        }
    }

    /// `logout` in cluster mode: the session ends here at once, but the reply (and close 1000)
    /// waits until Redis has the end and the user's record is stamped. A reply sent earlier
    /// would let the client's next step (on any node) be stamped before this logout: a
    /// catch-up would then list the user as changed after a session that ended later.
    func clusterLogout(_ session: Session, on connection: ConnectionID, id: JSON) {
        // The connection stays known (its later frames wait in its queue) until the answer.
        let state = connections[connection]
        end(session, .logout) { [self] in
            guard connections[connection] != nil else { return }
            reply(to: connection, id: id, .success([:]), at: outbox.actions.count)
            close(connection, .logout, reason: "logout")
        }
        connections[connection] = state
    }

    /// An abnormal drop: the session is held here and, in Redis, resumable on any node.
    func clusterSessionHeld(_ session: Session) {
        call([.script(SessionScripts.hold, arguments: [clusterKeys.prefix, session.sessionId, nodeId].map(storeArgument))]) { result in
            if case .success(let replies) = result, replies.first?.text == "ok", session.isHeld { session.messagesKeptInStore = true }
        }
    }

    /// SIGTERM: every session of this node becomes held with no node, resumable anywhere.
    func handOverSessions() {
        call([.script(SessionScripts.handOver, arguments: [clusterKeys.prefix, nodeId].map(storeArgument)),
              .command(["ZREM", clusterKeys.nodes, nodeId].map(storeArgument))]) { _ in }
    }

    /// Redis lost the cluster's data: every session here ends without a word to anyone and
    /// its connection closes with 1012, so clients log in again into an empty cluster.
    func clusterDataLost() {
        dropEverySession(closingWith: .serviceRestart, reason: CloseCode.clusterDataLostReason)
        clusterUserStatus?.unansweredEnds.removeAll()
    }

    /// The other nodes declared this node dead: its sessions belong to no node now, resumable
    /// anywhere; each connection here closes with 1001 so its client resumes.
    func clusterNodeFenced() {
        dropEverySession(closingWith: .shutdown, reason: "node fenced")
    }

    /// Forgets every local session without touching Redis, and closes its connection.
    private func dropEverySession(closingWith code: CloseCode, reason: String) {
        guard let clusterPresence else { return }
        for session in directory.all {
            _ = clusterPresence.forgetLocally(session)
            holdDeadlines.cancel(session.number)
            heldSessions[session.number] = nil
            let connection = session.connection
            directory.remove(session)
            if let connection { close(connection, code, reason: reason) }
        }
        clusterUserStatus?.forgetLocalSessions()
        clusterPresence.flushes = TimerQueue()
        clusterPresence.expiries = TimerQueue()
        clusterPresence.snapshotRetries = TimerQueue()
        clusterPresence.local.removeAll()
    }

    // MARK: - Reaping and control messages

    /// Every `cluster.heartbeatSeconds`: dead nodes' sessions become held, and held sessions
    /// with no node whose hold ended time out (PROTOCOL §9).
    func reapIfDue() {
        guard clusterPresence != nil else { return }
        let now = clock.monotonic
        guard now >= nextReapAt else { return }
        nextReapAt = now + configuration.cluster.heartbeatSeconds.milliseconds
        let retries = unfinishedEnds
        unfinishedEnds.removeAll()
        for retry in retries { retry() }
        clusterPresence?.expireOverdue()
        let arguments = [clusterKeys.prefix, nodeId, String(configuration.cluster.nodeTimeoutSeconds.milliseconds), "100"]
        call([.script(SessionScripts.reap, arguments: arguments.map(storeArgument)), clusterUserStatus!.sweepCommand]) { [self] result in
            guard case .success(let replies) = result, let reply = replies.first else { return }
            clusterUserStatus!.sweepAnswered(replies.count > 1 ? replies[1] : .null)
            clusterUserStatus!.retryUnansweredEnds()
            let reaped = ReapScriptReply(reply)
            completeEnds(reaped.timedOut)
            completeEnds(reaped.leftUnfinished, leftUnfinishedByTheirNode: true)
        }
    }

    /// Ends the reap script handed to this node, each as id, user, kind (`l`/`t`), how
    /// (`logout`/`closed`) and the channel ids not left yet: held sessions with no node whose
    /// hold ended (`timeout`), and ends another node began and did not finish (it died between
    /// `session.end` and `status.ended`; each is handed out once per `nodeTimeoutSeconds` until
    /// one is finished). The channels are left, then the user's record follows. Both steps are
    /// idempotent, so an end its own node finishes meanwhile changes nothing twice.
    private func completeEnds(_ handed: [ReapScriptReply.End], leftUnfinishedByTheirNode: Bool = false) {
        var ends: [StoreCommand] = []
        for end in handed {
            if leftUnfinishedByTheirNode { metrics.clusterEndsFinished += 1 }
            clusterPresence!.leave(sessionId: end.sessionId, user: end.user, channels: end.channels, kind: end.kind)
            ends.append(clusterUserStatus!.endedCommand(user: end.user, sessionId: end.sessionId, loggedOut: end.loggedOut))
        }
        clusterUserStatus!.sendEnds(ends)
    }

    /// A message on this node's control channel (``ControlMessage``).
    func handleControl(_ payload: [UInt8]) {
        guard let message = ControlMessage(payload: payload), let session = directory.session(id: message.sessionId) else { return }
        let connection = session.connection
        switch message {
        case .adopted:
            // Resumed on another node: this node's copy goes without a word (a connection it
            // still had — this node had stopped beating for a while — closes with 1001).
            holdDeadlines.cancel(session.number)
            heldSessions[session.number] = nil
            _ = clusterPresence!.forgetLocally(session)
            directory.remove(session)
            clusterUserStatus!.sessionLeftNode(session)
            if let connection { close(connection, .shutdown, reason: "session resumed on another node") }
        case .end(_, let code, let reason) where code == .disconnectedByServer:
            // The server API's disconnectUser: as logout, with the reason in the close frame.
            end(session, .logout)
            if let connection { close(connection, code, reason: reason ?? DisconnectUserRequest.defaultReason) }
        case .end(_, let code, _):
            end(session, .closed)
            if let connection { close(connection, code, reason: "too many sessions for this user") }
        }
    }

    /// Publishes `message` on `node`'s control channel (nobody checks that it arrives).
    func tell(node: String, _ message: ControlMessage) {
        call([.command(["PUBLISH", clusterKeys.prefix + "n:" + node, message.payload].map(storeArgument))]) { _ in }
    }
}
