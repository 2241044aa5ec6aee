import RollcallCore
import RollcallProtocol

/// The node's life in cluster mode: what arrives from Redis, the reaper, hand-over at
/// SIGTERM, a lost store or a fenced node, and the server API's ops over every node.
extension ClusterSessions {
    // MARK: - Timers

    var nextDeadline: Timestamp? {
        [presence.flushes.nextDeadline(), presence.expiries.nextDeadline(), presence.snapshotRetries.nextDeadline(), nextReapAt]
            .compactMap { $0 }.min()
    }

    func fireDueTimers() {
        presence.fireDueFlushes()
        presence.fireDueExpiries()
        presence.fireDueSnapshotRetries()
        reapIfDue()
    }

    /// Every `cluster.heartbeatSeconds`: dead nodes' sessions become held, and held sessions
    /// with no node whose hold ended time out (PROTOCOL §9).
    private func reapIfDue() {
        let now = broker.clock.monotonic
        guard now >= nextReapAt else { return }
        nextReapAt = now + configuration.cluster.heartbeatSeconds.milliseconds
        let retries = unfinishedEnds
        unfinishedEnds.removeAll()
        for retry in retries { retry() }
        presence.expireOverdue()
        presence.flushOverdue()
        reap(sweeping: true)
    }

    /// Sessions the reap script hands out at most per call, of each kind.
    static let reapBatch = 200

    /// Runs the reap script (with the user-status sweep once per tick). A full batch means more
    /// are due: the next batch is asked for as soon as this one answered, not a heartbeat later,
    /// so a dead node's 50,000 sessions time out within seconds of their hold, while no single
    /// script holds Redis for long (issue 29 item 8).
    private func reap(sweeping: Bool) {
        let commands = [SessionScripts.reap(prefix: keys.prefix, node: nodeId, nodeTimeoutMs: configuration.cluster.nodeTimeoutSeconds.milliseconds,
                                            batch: Self.reapBatch, groups: keys.groups.count)]
            + (sweeping ? [userStatus.sweepCommand] : [])
        call(commands) { [self] result in
            guard case .success(let replies) = result, let reply = replies.first else { return }
            if sweeping {
                userStatus.sweepAnswered(replies.count > 1 ? replies[1] : .null)
                userStatus.retryUnansweredEnds()
                presence.retryUnansweredUserSteps()
            }
            let reaped = ReapScriptReply(reply)
            refenceOrphans(reaped.orphaned)
            completeEnds(reaped.timedOut)
            completeEnds(reaped.leftUnfinished, leftUnfinishedByTheirNode: true)
            if reaped.timedOut.count >= Self.reapBatch || reaped.leftUnfinished.count >= Self.reapBatch {
                reap(sweeping: false)
            }
        }
    }

    /// Ends the reap script handed to this node, each as id, user, kind (`l`/`t`), how
    /// (`logout`/`closed`) and the channel ids not left yet: held sessions with no node whose
    /// hold ended (`timeout`), and ends another node began and did not finish (it died between
    /// `session.end` and `status.ended`; each is handed out once per `nodeTimeoutSeconds` until
    /// one is finished). The channels are left, then the user's record follows. Both steps are
    /// idempotent, so an end its own node finishes meanwhile changes nothing twice.
    private func completeEnds(_ handed: [ReapScriptReply.End], leftUnfinishedByTheirNode: Bool = false) {
        for end in handed {
            if leftUnfinishedByTheirNode { broker.metrics.clusterEndsFinished += 1 }
            finishEnd(sessionId: end.sessionId, user: end.user, channels: end.channels, kind: end.kind, loggedOut: end.loggedOut)
        }
    }

    // MARK: - The store's link

    func storeMessageArrived(channel: [UInt8], payload: [UInt8]) {
        if channel.elementsEqual(controlChannel.utf8) {
            handleControl(payload)
        } else if userStatus.isInbox(channel) {
            userStatus.deliver(channel: channel, payload: payload)
        } else {
            presence.deliver(channel: channel, payload: payload)
        }
    }

    func storeResubscribed() {
        presence.resyncEverything()
        userStatus.linkRestored()
    }

    /// Redis lost the cluster's data: every session here ends without a word to anyone and
    /// its connection closes with 1012, so clients log in again into an empty cluster.
    func storeLostData() {
        dropEverySession(closingWith: .serviceRestart, reason: CloseCode.clusterDataLostReason)
        userStatus.unansweredEnds.removeAll()
        unfinishedEnds.removeAll()
    }

    /// The other nodes declared this node dead: its sessions belong to no node now, resumable
    /// anywhere; each connection here closes with 1001 so its client resumes.
    func nodeFenced() {
        dropEverySession(closingWith: .shutdown, reason: "node fenced")
    }

    /// SIGTERM: every session of this node becomes held with no node, resumable anywhere.
    func shutDown() {
        call([SessionScripts.handOver(prefix: keys.prefix, node: nodeId, groups: keys.groups.count),
              .command(["ZREM", keys.nodes, nodeId].map(storeArgument))]) { [self] result in
            guard case .success(let replies) = result, let reply = replies.first else { return }
            refenceOrphans(ReapScriptReply.orphanedSessions(reply[1]))
        }
    }

    /// Forgets every local session without touching Redis, and closes its connection.
    private func dropEverySession(closingWith code: CloseCode, reason: String) {
        for session in broker.directory.all {
            _ = presence.forgetLocally(session)
            broker.forget(session)
            if let connection = session.connection { broker.close(connection, code, reason: reason) }
        }
        userStatus.forgetLocalSessions()
        presence.flushes = TimerQueue()
        presence.expiries = TimerQueue()
        presence.snapshotRetries = TimerQueue()
        presence.messagesAfterSnapshots.removeAll()
        presence.local.removeAll()
    }

    /// A message on this node's control channel (``ControlMessage``).
    func handleControl(_ payload: [UInt8]) {
        guard let message = ControlMessage(payload: payload), let session = broker.directory.session(id: message.sessionId) else {
            return
        }
        let connection = session.connection
        switch message {
        case .held:
            handOverHeard(session)
        case .adopted(_, let tokenHash) where !tokenHash.isEmpty && tokenHash != Self.tokenHash(of: session):
            // Late: this node resumed the session since, under a new token (the message was
            // held back while the node may have been declared dead, or the claim that sent it
            // was cancelled and the session claimed here). Its copy is the session now: before,
            // it was forgotten, and Redis kept it live here for good (chaos seeds
            // 184026005883807, 218644873678051).
            break
        case .adopted:
            // Resumed on another node: this node's copy goes without a word (a connection it
            // still had — this node had stopped beating for a while — closes with 1001).
            forgetStaleCopy(session)
            if let connection { broker.close(connection, .shutdown, reason: "session resumed on another node") }
        case .end(_, let code, let reason) where code == .disconnectedByServer:
            // The server API's disconnectUser: as logout, with the reason in the close frame.
            broker.disconnect(session, reason: reason ?? DisconnectUserRequest.defaultReason)
        case .end(_, let code, _):
            broker.end(session, .closed)
            if let connection { broker.close(connection, code, reason: "too many sessions for this user") }
        }
    }

    /// Forgets this node's copy of a session another node has taken over, without a word to
    /// anyone: its local channel views, the directory, the user's status here.
    func forgetStaleCopy(_ session: Session) {
        _ = presence.forgetLocally(session)
        broker.forget(session)
        userStatus.sessionLeftNode(session)
    }

    // MARK: - Server API

    /// `disconnectUser`: every session of the user, on every node, ends as by `logout`, and the
    /// answer waits until Redis has every end (record, channels, the user's `loggedOut`). This
    /// node ends them all in Redis itself; live ones on other nodes are closed with 4403 and the
    /// reason by their node, told on its control channel (that node then finds the session gone
    /// in Redis and only closes the connection). A node that never hears of it keeps a
    /// connection whose session no longer exists anywhere else (fenced: its changes are refused).
    func disconnectUser(_ request: DisconnectUserRequest, then done: @escaping (Result<JSON, BrokerError>) -> Void) {
        call([ServerAPIScripts.sessionsOfUser(sessions: keys.user(request.userId).sessions, user: request.userId)]) { [self] result in
            switch result {
            case .failure(let failure):
                done(.failure(failure.brokerError))
            case .success(let replies):
                let sessions = ServerAPIScripts.userSessions(replies.first ?? .null)
                var remaining = sessions.count + 1
                let oneEnded = {
                    remaining -= 1
                    if remaining == 0 { done(.success(.object(["sessions": .int(sessions.count)]))) }
                }
                for (sessionId, node) in sessions {
                    if node == nodeId, let session = broker.directory.session(id: sessionId) {
                        broker.disconnect(session, reason: request.reason, recorded: oneEnded)
                    } else {
                        endRemotely(sessionId, user: request.userId, node: node, loggedOut: true, then: oneEnded)
                        if !node.isEmpty, node != nodeId {
                            tell(node: node, .end(sessionId: sessionId, code: .disconnectedByServer, reason: request.reason))
                        }
                    }
                }
                oneEnded()
            }
        }
    }

    /// `getInfo`: the live nodes with their sessions, and the cluster's totals (the channels
    /// summed over every key group's bucket, asked beside the nodes and sessions).
    func info(then done: @escaping (Result<JSON, BrokerError>) -> Void) {
        var counts: Result<[StoreReply], StoreFailure>?, nodes: Result<[StoreReply], StoreFailure>?
        let answered = {
            guard let counts, let nodes else { return }
            switch (nodes, counts) {
            case (.failure(let failure), _), (_, .failure(let failure)):
                done(.failure(failure.brokerError))
            case (.success(let replies), .success(let channelCounts)):
                let info = ServerAPIScripts.ClusterInfo(replies.first ?? .null, channelCounts: channelCounts)
                done(.success(.object([
                    "version": .string(BrokerVersion.current),
                    "nodes": .array(info.nodes.map { .object(["nodeId": .string($0.id), "sessions": .int($0.sessions)]) }),
                    "channels": .int(info.channels),
                    "sessions": .int(info.sessions),
                ])))
            }
        }
        presence.callEveryGroup({ [keys] in ServerAPIScripts.channelCount(channelList: keys.channelList(group: $0)) }) {
            counts = $0
            answered()
        }
        let command = ServerAPIScripts.info(prefix: keys.prefix, liveNodeTimeoutMs: configuration.cluster.nodeTimeoutSeconds.milliseconds,
                                            groups: keys.groups.count)
        call([command]) {
            nodes = $0
            answered()
        }
    }
}

extension BrokerEngines {
    /// The Redis engines (cluster mode): presence, user status and sessions on Redis. A
    /// broker made with them runs as a node of the cluster `configuration.cluster` names.
    package static func onRedis(_ broker: Broker) -> BrokerEngines {
        let keys = ClusterKeys(configuration: broker.configuration)
        let presence = ClusterPresence(of: broker, keys: keys)
        let userStatus = ClusterUserStatus(of: broker, keys: keys)
        broker.directory.indexesIds = true
        return BrokerEngines(presence: presence, userStatuses: userStatus,
                             sessions: ClusterSessions(broker: broker, presence: presence, userStatus: userStatus))
    }
}
