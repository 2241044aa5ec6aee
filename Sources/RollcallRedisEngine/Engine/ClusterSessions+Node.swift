import RollcallCore
import RollcallProtocol

/// The node's life in cluster mode: what arrives from Redis, the reaper, hand-over at
/// SIGTERM, a lost store or a fenced node, and the server API's ops over every node.
extension ClusterSessions {
    // MARK: - Timers

    var nextDeadline: Timestamp? {
        [presence.flushes.nextDeadline(), presence.expiries.nextDeadline(), presence.snapshotRetries.nextDeadline(),
         presence.hearingDeadlines.nextDeadline(), nextReapAt]
            .compactMap { $0 }.min()
    }

    func fireDueTimers() {
        presence.fireDueFlushes()
        presence.fireDueExpiries()
        presence.fireDueSnapshotRetries()
        presence.fireDueHearingDeadlines()
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
        reap()
    }

    /// Sessions `session.reapGroup` hands out at most per call and key group, of each kind.
    static let reapBatch = 200

    /// How long the scanner's lease lasts (`P{0}scanner`): two heartbeats, so the scanner
    /// keeps it at each tick with one to spare, and another node takes over within two
    /// heartbeats of its last tick (no more than `nodeTimeoutSeconds`, at least twice the
    /// heartbeat). With one key group there is no lease: every node scans, as the scans cost
    /// one call each.
    var scannerLeaseMs: Int64 {
        keys.groups.count > 1 ? 2 * configuration.cluster.heartbeatSeconds.milliseconds : 0
    }

    /// How long the scanner takes to go over every key group with `session.reapGroup` and the
    /// overdue state keys' buckets: one second, a slice of the groups per tick (all of them each
    /// tick with one group, or with a heartbeat of a second or more). A dead node's sessions are
    /// orphaned within a round of being declared dead and timed out within a round of their
    /// hold's end: two seconds at most of PROTOCOL §9's five of slack, for 1/10 of the calls per
    /// tick at 0.1 s heartbeats.
    static let reapRoundSeconds = 1.0

    /// How long the scanner takes to go over every key group's overdue interval flushes: half
    /// `nodeTimeoutSeconds`, at most ``reapRoundSeconds`` (every tick when that is no longer
    /// than a heartbeat), so that an `interval` whose node died still comes within
    /// `intervalSeconds` + `nodeTimeoutSeconds` (PROTOCOL §9).
    static func flushRoundSeconds(_ cluster: Configuration.Cluster) -> Double {
        min(reapRoundSeconds, cluster.nodeTimeoutSeconds / 2)
    }

    /// The reaper's tick: `session.declareDead` on the control slot (it hands back the
    /// scanner's count of subscriptions, and takes this node's when it swept every group);
    /// then, on the node that scans (every node with one key group; the lease holder
    /// with more, docs/cluster.md "The scans"), for this tick's slice of the groups
    /// (``reapRoundSeconds``) the overdue state keys
    /// (``ClusterPresence/expireOverdue(groups:ifFailed:)``), the user-status sweep
    /// (`status.sweep`) and `session.reapGroup` (every group while a node is being reaped; one
    /// pass on the link at a time), and
    /// for the flushes' slice (``flushRoundSeconds(_:)``) the overdue interval flushes
    /// (``ClusterPresence/flushOverdue(groups:ifFailed:)``);
    /// `session.reaped` once every group answered for a node being reaped.
    private func reap() {
        let declare = SessionScripts.declareDead(prefix: keys.prefix, node: nodeId, nodeTimeoutMs: configuration.cluster.nodeTimeoutSeconds.milliseconds,
                                                 scannerLeaseMs: scannerLeaseMs, releasing: scanFailed,
                                                 subscriptions: userStatus.sweptSubscriptions)
        scanFailed = false
        call([declare]) { [self] result in
            guard case .success(let replies) = result, let reply = replies.first else { return }
            let declared = DeclareDeadScriptReply(reply)
            userStatus.reaperTickAnswered(subscriptions: declared.subscriptions)
            userStatus.retryUnansweredEnds()
            presence.retryUnansweredUserSteps()
            guard declared.scans else {
                userStatus.stopSweeping()
                groupsReapedFor.removeAll()
                return
            }
            if declared.reaping.isEmpty { groupsReapedFor.removeAll() }
            let slice = reapRound.slice()
            presence.expireOverdue(groups: slice) { [self] in scanFailed = true }
            presence.call(groups: slice, priority: .background, userStatus.sweepCommand(group:)) { [self] result in
                guard case .success(let replies) = result else { return scanFailed = true }
                userStatus.sweepAnswered(groups: slice, replies: replies)
            }
            presence.flushOverdue(groups: flushRound.slice()) { [self] in scanFailed = true }
            // One pass of `session.reapGroup` on the link at a time: a pass of every group
            // (a node just declared dead has its sessions orphaned in every group at once) that
            // takes longer than a heartbeat is not doubled by the next tick. Passes piled up
            // behind each other at 0.2 s heartbeats on a loaded machine, filled the link's
            // gate, had their own calls given up there (so the reaping never completed and
            // started over), and held every request of the node's clients behind them past
            // their timeout (chaos on Redis Cluster, session 47).
            // After a failed pass, the next waits a reap round (a master refusing writes).
            guard !reapPassInFlight, broker.clock.monotonic >= reapPassNotBefore else { return }
            reapGroups(declared.reaping.isEmpty ? slice : Array(keys.groups.all), reaping: declared.reaping, endsDue: declared.endsDue)
        }
    }

    /// `session.reapGroup` for `groups`, the nodes `reaping` orphaned in each. A full batch in a
    /// group means more are due there: its next batch is asked for as soon as this one
    /// answered, not a tick later, so a dead node's 50,000 sessions time out within seconds of
    /// their hold, while no single script holds Redis for long (issue 29 item 8).
    private func reapGroups(_ groups: [Int], reaping: [DeclareDeadScriptReply.Reaping], endsDue: Bool) {
        let nodeTimeoutMs = configuration.cluster.nodeTimeoutSeconds.milliseconds
        reapPassInFlight = true
        presence.call(groups: groups, priority: .background, { [keys] in
            SessionScripts.reapGroup(keys: keys, group: $0, reaping: reaping, nodeTimeoutMs: nodeTimeoutMs, batch: Self.reapBatch, endsDue: endsDue)
        }) { [self] result in
            reapPassInFlight = false
            guard case .success(let replies) = result else {
                // Groups skipped: a node being reaped starts its count again, a round from now.
                for node in reaping { groupsReapedFor[node.node] = nil }
                reapPassNotBefore = broker.clock.monotonic + Self.reapRoundSeconds.milliseconds
                scanFailed = true
                return
            }
            var full: [Int] = []
            var refencing: Set<String> = []
            for (group, reply) in zip(groups, replies) {
                let reaped = ReapScriptReply(reply)
                refenceReaped(reaped.orphaned, group: group)
                refencing.formUnion(reaped.orphaned.map(\.node))
                completeEnds(reaped.timedOut)
                completeEnds(reaped.leftUnfinished, leftUnfinishedByTheirNode: true)
                if reaped.timedOut.count >= Self.reapBatch || reaped.leftUnfinished.count >= Self.reapBatch { full.append(group) }
            }
            countGroupsReaped(groups.count, for: reaping.map(\.node), stillRefencing: refencing)
            if !full.isEmpty { reapGroups(full, reaping: [], endsDue: endsDue) }
        }
    }

    /// `count` more key groups orphaned the sessions of each of `reaping`: a node every group
    /// has orphaned, with no session whose channels are still to be refenced, leaves
    /// `P{0}reaping` (`session.reaped`). A node with some (`stillRefencing`) starts its count
    /// again: the refences are confirmed in Redis, and a later round finds its logs empty. A
    /// node no longer listed is forgotten (another scanner finished it).
    private func countGroupsReaped(_ count: Int, for reaping: [String], stillRefencing: Set<String>) {
        guard !reaping.isEmpty else { return }
        groupsReapedFor = groupsReapedFor.filter { reaping.contains($0.key) }
        var done: [String] = []
        for node in reaping {
            if stillRefencing.contains(node) {
                groupsReapedFor[node] = nil
                continue
            }
            let reaped = groupsReapedFor[node, default: 0] + count
            if reaped >= keys.groups.count { done.append(node) } else { groupsReapedFor[node] = reaped }
        }
        guard !done.isEmpty else { return }
        for node in done { groupsReapedFor[node] = nil }
        call([SessionScripts.reaped(prefix: keys.prefix, nodes: done)]) { _ in }
    }

    /// Ends `session.reapGroup` handed to this node, each as id, user, kind (`l`/`t`), how
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

    func storeListening(_ channels: [[UInt8]]) {
        presence.heard(channels)
    }

    func storeBeat(_ beat: StoreBeat) {
        if beat.liveAt >= latestBeat?.liveAt ?? 0 { latestBeat = beat }
        guard awaitsRevival else { return }
        awaitsRevival = false
        endSessionsLostAtFence()
    }

    /// Back among the live nodes after a fence: the sessions it dropped then whose record is no
    /// longer in Redis at all leave the channels this node knew them in (`timeout`), and their
    /// user's status follows. The reaper hands over only what the user's slot lists
    /// (`P{<g>}ns:<node>`): a record that slot lost (its master failed over to a replica that
    /// lacked the writes) left the session a member of channels in other slots for good, seen
    /// online by everyone (chaos on Redis Cluster, session 47). A record that is there was
    /// handed over (resumable, or timed out by the reaper), and is left alone.
    private func endSessionsLostAtFence() {
        let dropped = droppedAtFence
        droppedAtFence = []
        guard !dropped.isEmpty else { return }
        let checks = dropped.map { StoreCommand.command(["EXISTS", keys.user($0.user).session($0.sessionId).record].map(storeArgument)) }
        call(checks) { [self] result in
            guard case .success(let replies) = result else {
                // Redis out of reach: asked again at the next revival's first beat.
                droppedAtFence += dropped
                return
            }
            for (session, reply) in zip(dropped, replies) where reply.integer == 0 { endLostRecord(session) }
        }
    }

    /// A session whose record Redis no longer has leaves the channels this node knew it in
    /// (`timeout`), then its user's status follows (``finishEnd``): what a failover that lost
    /// the record would otherwise leave a member for good. Counted in
    /// `rollcall_cluster_lost_records_ended_total`.
    func endLostRecord(_ session: DroppedSession) {
        broker.metrics.clusterLostRecordsEnded += 1
        finishEnd(sessionId: session.sessionId, user: session.user, channels: session.channels, kind: .timeout, loggedOut: false)
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
        awaitsRevival = true
        droppedAtFence += dropEverySession(closingWith: .shutdown, reason: "node fenced")
    }

    /// SIGTERM: every session of this node becomes held with no node, resumable anywhere
    /// (one `session.handOver` per key group), then the node leaves the live nodes.
    func shutDown() {
        // One call per key group; the channels of the sessions handed over are refenced (with
        // more than one group), best effort: the process is exiting.
        presence.callEveryGroup({ [keys, nodeId] in SessionScripts.handOver(keys: keys, group: $0, node: nodeId) }) { [self] result in
            guard case .success(let replies) = result else { return }
            for reply in replies { refenceHandedOver(ReapScriptReply.orphanedSessions(reply[1])) }
        }
        call([.command(["ZREM", keys.nodes, nodeId].map(storeArgument))]) { _ in }
    }

    /// Forgets every local session without touching Redis, and closes its connection; returns
    /// each with the channels it was in here.
    @discardableResult
    private func dropEverySession(closingWith code: CloseCode, reason: String) -> [DroppedSession] {
        var dropped: [DroppedSession] = []
        for session in broker.directory.all {
            let channels = presence.forgetLocally(session)
            dropped.append(DroppedSession(sessionId: session.sessionId, user: session.userId, channels: channels))
            broker.forget(session)
            if let connection = session.connection { broker.close(connection, code, reason: reason) }
        }
        userStatus.forgetLocalSessions()
        presence.flushes = TimerQueue()
        presence.expiries = TimerQueue()
        presence.snapshotRetries = TimerQueue()
        presence.hearingDeadlines = TimerQueue()
        presence.messagesAfterSnapshots.removeAll()
        presence.local.removeAll()
        return dropped
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
            dropStaleCopy(session, reason: "session resumed on another node")
        case .end(_, let code, let reason) where code == .disconnectedByServer:
            // The server API's disconnectUser: as logout, with the reason in the close frame.
            broker.disconnect(session, reason: reason ?? DisconnectUserRequest.defaultReason)
        case .end(_, let code, _):
            broker.end(session, .closed)
            if let connection { broker.close(connection, code, reason: "too many sessions for this user") }
        }
    }

    /// Forgets this node's copy of a session that is no longer its own (``forgetStaleCopy(_:)``)
    /// and closes its connection, if it still has one, with 1001 and `reason`.
    func dropStaleCopy(_ session: Session, reason: String) {
        let connection = session.connection
        forgetStaleCopy(session)
        if let connection { broker.close(connection, .shutdown, reason: reason) }
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

    /// `getInfo`: the live nodes with their sessions, and the cluster's totals. The nodes come
    /// from the control slot (`api.info`), then their sessions and the channels are counted per
    /// key group (`api.groupSessions`, one call per group) and summed.
    func info(then done: @escaping (Result<JSON, BrokerError>) -> Void) {
        call([ServerAPIScripts.info(prefix: keys.prefix, liveNodeTimeoutMs: configuration.cluster.nodeTimeoutSeconds.milliseconds)]) { [self] result in
            let nodes: StoreReply
            switch result {
            case .failure(let failure):
                return done(.failure(failure.brokerError))
            case .success(let replies):
                nodes = replies.first ?? .null
            }
            let ids = stride(from: 0, to: (nodes.elements ?? []).count - 1, by: 2).compactMap { nodes[$0].text }
            presence.callEveryGroup({ [keys] in ServerAPIScripts.groupSessions(keys: keys, group: $0, nodes: ids) }) { result in
                switch result {
                case .failure(let failure):
                    done(.failure(failure.brokerError))
                case .success(let groupSessions):
                    let info = ServerAPIScripts.ClusterInfo(nodes, groupSessions: groupSessions)
                    done(.success(.object([
                        "version": .string(BrokerVersion.current),
                        "nodes": .array(info.nodes.map { .object(["nodeId": .string($0.id), "sessions": .int($0.sessions)]) }),
                        "channels": .int(info.channels),
                        "sessions": .int(info.sessions),
                    ])))
                }
            }
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
