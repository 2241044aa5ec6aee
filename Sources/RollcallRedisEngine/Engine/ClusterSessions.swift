import Crypto
import RollcallCore
import RollcallProtocol

/// Sessions in cluster mode (PROTOCOL §9; ``SessionScripts``): every session is recorded in
/// Redis, so `maxSessionsPerUser` holds across nodes, a held session resumes on any node,
/// a dead node's sessions are held and then time out, and SIGTERM hands sessions over.
/// The connection itself, its rate limits and its timers stay on the broker of its node.
final class ClusterSessions: SessionEngine {
    unowned let broker: Broker
    let presence: ClusterPresence
    let userStatus: ClusterUserStatus
    let keys: ClusterKeys
    /// When the reaper runs next (monotonic ms).
    var nextReapAt: Timestamp = 0
    /// Session ends Redis did not answer (it was out of reach), tried again at each reaper tick.
    var unfinishedEnds: [() -> Void] = []
    /// The slices of the key groups the scanner reaps (`session.reapGroup`) and reads for
    /// overdue state keys at each tick: every group within ``ClusterSessions/reapRoundSeconds``.
    var reapRound: KeyGroupRound
    /// The slices of the key groups the scanner reads for overdue interval flushes at each
    /// tick: every group within half `nodeTimeoutSeconds` (``ClusterSessions/flushRoundSeconds``).
    var flushRound: KeyGroupRound
    /// The nodes being reaped (`P{0}reaping`), each with how many key groups in a row answered
    /// `session.reapGroup` with it named: at every group, `session.reaped` takes it off.
    var groupsReapedFor: [String: Int] = [:]
    /// A read of the key groups' buckets failed this tick: at the next, this node gives the
    /// scanner's lease up (another node that can read them takes it).
    var scanFailed = false
    /// A pass of `session.reapGroup` is on the link (at most one at a time: ``reap()``).
    var reapPassInFlight = false
    /// After a reap pass failed, none is sent before this (monotonic ms): a master that refuses
    /// writes fails every pass, and a pass of every group at every tick loaded the link and
    /// Redis for nothing.
    var reapPassNotBefore: Timestamp = 0
    /// What this node's latest beat that found it live saw (``StoreBeat``): with more than one
    /// key group, starts and claims pass it, as `P{0}nodes` is in another slot.
    var latestBeat: StoreBeat?
    /// The other nodes declared this node dead and it fenced itself (``nodeFenced()``); until a
    /// beat finds it live again (``storeBeat(_:)``: `cluster.revive` ran, once the reaper had
    /// orphaned its old sessions in every key group) it refuses logins. A session started
    /// meanwhile was closed again at the next beat that still said "dead", so its client saw a
    /// login answered and its next request cut off, over and over while a master refused the
    /// reaper's writes (chaos on Redis Cluster, session 47).
    var awaitsRevival = false
    /// The sessions the fences since the last live beat dropped (``nodeFenced()``), checked
    /// once the node is back (``endSessionsLostAtFence()``).
    var droppedAtFence: [DroppedSession] = []

    /// A session this node forgot without a word to Redis, with the channels it was in here.
    struct DroppedSession {
        let sessionId: String
        let user: Name
        let channels: [ChannelKey]
    }

    init(broker: Broker, presence: ClusterPresence, userStatus: ClusterUserStatus) {
        self.broker = broker
        self.presence = presence
        self.userStatus = userStatus
        self.keys = presence.keys
        let cluster = broker.configuration.cluster
        reapRound = KeyGroupRound(count: presence.keys.groups.count, roundSeconds: Self.reapRoundSeconds, tickSeconds: cluster.heartbeatSeconds)
        flushRound = KeyGroupRound(count: presence.keys.groups.count, roundSeconds: Self.flushRoundSeconds(cluster),
                                   tickSeconds: cluster.heartbeatSeconds)
        presence.onSessionNoLongerHere = { [unowned self] session, owner in
            // As when an `adopted` message says so: the client resumes where the session is
            // (or logs in afresh).
            let reason = switch owner {
            case nil: "session no longer in the cluster"
            case ""?: "session handed over"
            default: "session resumed on another node"
            }
            let lost = DroppedSession(sessionId: session.sessionId, user: session.userId, channels: Array(session.presence.joined.keys))
            dropStaleCopy(session, reason: reason)
            // No record at all: ended elsewhere (its channels left there), or lost by a
            // failover (left nowhere); leaving again is idempotent (`notin`).
            if owner == nil { endLostRecord(lost) }
        }
    }

    var nodeId: String { broker.nodeId }
    var configuration: Configuration { broker.configuration }

    /// This node's control channel (``ControlMessage``).
    var controlChannel: String { keys.controlChannel(of: nodeId) }

    /// The hash of `session`'s current resume token, as its record in Redis has it while the
    /// session is this node's.
    static func tokenHash(of session: Session) -> String {
        ResumeToken(session.resumeToken).map(tokenHash) ?? ""
    }

    /// The hash a resume token is known by in Redis (the token itself never leaves the node).
    static func tokenHash(_ token: ResumeToken) -> String {
        SHA256.hash(data: Array(token.text.utf8)).prefix(16).map { byte in
            (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
    }

    func call(_ commands: [StoreCommand], then: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        broker.call(commands, then: then)
    }

    // MARK: - Login

    /// The answer to a login this node may not make: the others declared it dead, and it
    /// learns so at its next heartbeat (then it is back among the live nodes).
    var fencedError: BrokerError { ClusterPresence.fenced(configuration) }

    /// `login` in cluster mode: a resume by token on any node, else a new session recorded in
    /// Redis (closing the user's oldest sessions over the limit, on whichever node).
    func login(_ request: LoginRequest, grant: Grant, on connection: ConnectionID,
               then done: @escaping (Result<JSON, BrokerError>, Session?) -> Void) {
        guard !awaitsRevival else { return done(.failure(fencedError), nil) }
        let requestedTimeoutMs = request.presenceTimeoutSeconds.map(Broker.presenceTimeoutMs)
        let newToken = ResumeToken(using: &broker.random)
        guard let resumeText = request.resumeToken, let oldToken = ResumeToken(resumeText) else {
            start(request, on: connection, grant: grant, timeoutMs: requestedTimeoutMs, token: newToken, then: done)
            return
        }
        // A node silent for 2.5 heartbeats has stopped (or is cut off): its live sessions resume too.
        let staleMs = (configuration.cluster.heartbeatSeconds * 2.5).milliseconds
        let (tokenHash, newTokenHash) = (Self.tokenHash(oldToken), Self.tokenHash(newToken))
        let claim = SessionScripts.claim(prefix: keys.prefix, tokenHash: tokenHash, user: request.userId, keys: keys.user(request.userId), node: nodeId,
                                         newTokenHash: newTokenHash, staleMs: staleMs, markMs: cancelMarkMs, groups: keys.groups.count,
                                         beat: latestBeat)
        call([claim]) { [self] result in
            switch result {
            case .failure(let failure):
                // The claim may have run (its answer lost) or may still run (queued in a paused
                // Redis, a frozen link): either way it is made void, so the session is not left
                // live on this node, which never serves it, and the client's retry resumes it.
                if failure.mayHaveReachedRedis { cancelClaim(of: request.userId, tokenHash: tokenHash, newTokenHash: newTokenHash) }
                done(.failure(failure.brokerError), nil)
            case .success(let replies):
                let reply = ClaimScriptReply(replies.first ?? .null)
                guard refencesChannels, reply.outcome == .ok, let sessionId = reply.sessionId else {
                    resumeClaimed(reply, request, grant: grant, on: connection, requestedTimeoutMs: requestedTimeoutMs,
                                  token: newToken, tokenHash: tokenHash, newTokenHash: newTokenHash, then: done)
                    return
                }
                // The channels are in other slots: their fence copies name this node before the
                // resume is answered, so no earlier owner acts there after it (docs/cluster.md step 1).
                refence(sessionId, in: reply.channels.map(\.0), owner: nodeId, held: false, from: "",
                        kept: .take(claim: newTokenHash, markMs: cancelMarkMs)) { [self] refenced in
                    switch refenced {
                    case .failure(let failure):
                        cancelClaim(of: request.userId, tokenHash: tokenHash, newTokenHash: newTokenHash)
                        done(.failure(failure.brokerError), nil)
                    case .success(let answers):
                        var reply = reply
                        reply.refenced(answers)
                        resumeClaimed(reply, request, grant: grant, on: connection, requestedTimeoutMs: requestedTimeoutMs,
                                      token: newToken, tokenHash: tokenHash, newTokenHash: newTokenHash, then: done)
                    }
                }
            }
        }
    }

    /// What a claim answered (`reply`), its channels refenced: the session resumes here, or
    /// a new one starts (nothing to resume), or the login waits or fails.
    private func resumeClaimed(_ reply: ClaimScriptReply, _ request: LoginRequest, grant: Grant, on connection: ConnectionID,
                               requestedTimeoutMs: Int64?, token newToken: ResumeToken, tokenHash: String, newTokenHash: String,
                               then done: @escaping (Result<JSON, BrokerError>, Session?) -> Void) {
        if let sessionId = reply.sessionId, !reply.previousNode.isEmpty, reply.previousNode != nodeId {
            // The script no longer publishes (a shard channel of another slot on Redis
            // Cluster): the node that claimed tells the previous one, right after the answer.
            tell(node: reply.previousNode, .adopted(sessionId: sessionId, tokenHash: tokenHash))
        }
        if reply.mustWait {
            // The node that holds it is still handing over what it heard before the
            // hold (a moment, at most 2.5 heartbeats): asked again at the next tick.
            unfinishedEnds.append { [self] in
                guard broker.connections[connection] != nil else { return }
                login(request, grant: grant, on: connection, then: done)
            }
            return
        }
        if reply.outcome == .fenced {
            done(.failure(fencedError), nil)
            return
        }
        guard let sessionId = reply.sessionId else {
            start(request, on: connection, grant: grant, timeoutMs: requestedTimeoutMs, token: newToken, then: done)
            return
        }
        guard broker.connections[connection] != nil else {
            // The client went away meanwhile: the session goes back to being held,
            // under the token the client still has.
            cancelClaim(of: request.userId, tokenHash: tokenHash, newTokenHash: newTokenHash)
            return
        }
        let timeoutMs = requestedTimeoutMs ?? (reply.presenceTimeoutMs ?? configuration.presence.timeoutSeconds.milliseconds)
        let kept = reply.kept.delivered(within: configuration.limits.heldMessageBytes)
        if let local = broker.directory.session(id: sessionId), local.isHeld {
            if reply.previousNode == nodeId {
                presence.messagesSeenBeforeResume(local, reply.messageNumbers)
                done(.success(broker.resume(local, on: connection, grant: grant, presenceTimeoutMs: timeoutMs,
                                            customStatus: request.customStatus, token: newToken, kept: kept)), local)
                return
            }
            // Redis had it elsewhere: this node's copy is stale (it missed the `adopted`
            // message while its pub/sub link was cut, and the session joined and left
            // channels on another node since: chaos seed 124295245245791, `resume`). It
            // goes as `adopted` would have taken it, and the session comes from Redis' record.
            forgetStaleCopy(local)
        }
        let session = adoptSession(sessionId, user: request.userId, platform: reply.platform,
                                   on: connection, timeoutMs: timeoutMs, token: newToken, grant: grant)
        presence.adopt(session, channels: reply.channels)
        presence.messagesSeenBeforeResume(session, reply.messageNumbers)
        done(.success(broker.resume(session, on: connection, grant: grant, presenceTimeoutMs: timeoutMs,
                                    customStatus: request.customStatus, token: newToken, kept: kept)), session)
    }

    /// A session another node held (or a dead node left), now on this connection.
    private func adoptSession(_ sessionId: String, user: Name, platform: Platform, on connection: ConnectionID, timeoutMs: Int64,
                              token: ResumeToken, grant: Grant) -> Session {
        broker.nextSessionNumber += 1
        let session = Session(number: broker.nextSessionNumber, userId: user, platform: platform,
                              connection: connection, presenceTimeoutMs: timeoutMs, token: token,
                              sessionId: sessionId)
        session.grant = grant
        broker.directory.add(session)
        return session
    }

    /// A new session: recorded in Redis, then the user's oldest sessions over the limit end
    /// with 4409 wherever they are, then the login answers.
    private func start(_ request: LoginRequest, on connection: ConnectionID, grant: Grant, timeoutMs: Int64?,
                       token: ResumeToken, then done: @escaping (Result<JSON, BrokerError>, Session?) -> Void) {
        guard broker.connections[connection] != nil else { return }
        let session = broker.newSession(request, on: connection, grant: grant, timeoutMs: timeoutMs, token: token)
        let start = SessionScripts.start(prefix: keys.prefix, record: keys.user(request.userId).session(session.sessionId).record,
                                         id: session.sessionId, user: request.userId,
                                         platform: request.platform.rawValue, node: nodeId,
                                         presenceTimeoutMs: session.presenceTimeoutMs, tokenHash: Self.tokenHash(token),
                                         maxSessionsPerUser: configuration.limits.maxSessionsPerUser, groups: keys.groups.count,
                                         liveAt: latestBeat?.liveAt ?? 0)
        // The user's inbox is heard before the session exists, so no event of it is missed.
        userStatus.hearInbox(of: request.userId)
        call([start,
              userStatus.startedCommand(session, customStatus: request.customStatus)]) { [self] result in
            switch result {
            case .failure(let failure):
                // As a claim: the start may have run or still run, so it is made void.
                userStatus.stopHearingIfUnused(request.userId)
                if failure.mayHaveReachedRedis { cancelStart(session.sessionId, user: request.userId) }
                done(.failure(failure.brokerError), nil)
            case .success(let replies):
                guard broker.connections[connection] != nil else {
                    if replies.count > 1 { _ = userStatus.unwrapped(replies[1]) }
                    userStatus.stopHearingIfUnused(request.userId)
                    endInCluster(sessionId: session.sessionId, user: session.userId, channels: [], kind: .leave,
                                 tokenHash: Self.tokenHash(token))
                    return
                }
                let started = StartScriptReply(replies.first ?? .null)
                guard started.outcome == .ok else {
                    // Fenced: nothing was recorded, and `status.started` changed nothing either
                    // (no such session in Redis); the user status engine forgets the session.
                    userStatus.stopHearingIfUnused(request.userId)
                    done(.failure(started.outcome == .fenced ? fencedError : ClusterPresence.unexpected(replies.first ?? .null)), nil)
                    return
                }
                broker.directory.add(session)
                broker.admit(session, on: connection)
                userStatus.sessionStarted(session, reply: replies.count > 1 ? replies[1] : .null)
                for (sessionId, node) in started.overTheLimit { endOverTheLimit(sessionId, user: request.userId, node: node) }
                done(.success(broker.loginResult(session, resumed: false, channels: nil)), session)
            }
        }
    }

    /// How long a cancel's mark, and the messages a claim handed over, stay in Redis: a claim
    /// or start this node gave up on may run that late (queued in a paused Redis, or in a link
    /// that thaws) — ten node timeouts, at least a minute, as the mark of a node declared dead.
    var cancelMarkMs: Int64 { max(60_000, 10 * configuration.cluster.nodeTimeoutSeconds.milliseconds) }

    /// Makes void a claim this node gave up on (its answer was lost or late, or the client went
    /// away): sent at once, and again at each reaper tick until Redis answers. If it ran, the
    /// session is held again with no node under its old token (the client's retry resumes it,
    /// else it times out); if not, it will find nothing (``SessionScripts/cancelClaim``).
    func cancelClaim(of user: Name, tokenHash: String, newTokenHash: String) {
        let cancel = SessionScripts.cancelClaim(prefix: keys.prefix, user: keys.user(user), tokenHash: tokenHash, newTokenHash: newTokenHash,
                                                node: nodeId, markMs: cancelMarkMs, groups: keys.groups.count)
        call([cancel]) { [self] result in
            switch result {
            case .failure:
                unfinishedEnds.append { [self] in cancelClaim(of: user, tokenHash: tokenHash, newTokenHash: newTokenHash) }
            case .success(let replies):
                // Held again with no node: with more than one key group its channels' fence
                // copies still name this node (the claim's refence wrote them) and count it
                // live for messages, so they are refenced as after an orphaning.
                let reply = replies.first ?? .null
                guard refencesChannels, reply[0].text == "held", let sessionId = reply[1].text else { return }
                refenceUntilAnswered(sessionId, in: ClusterKeys.channels(fromIds: reply[2]), owner: "", held: true, from: nodeId,
                                     kept: .restore(claim: newTokenHash))
            }
        }
    }

    /// Makes void a `session.start` of `user` this node gave up on, as ``cancelClaim(of:tokenHash:newTokenHash:)``:
    /// if it ran, the session ends as a close would (it joined nothing; the user's record
    /// follows, `offline` after the last session); if not, it will refuse.
    func cancelStart(_ sessionId: String, user: Name) {
        let cancel = SessionScripts.cancelStart(prefix: keys.prefix, session: keys.user(user).session(sessionId), node: nodeId,
                                                markMs: cancelMarkMs, groups: keys.groups.count)
        call([cancel]) { [self] result in
            switch result {
            case .failure:
                unfinishedEnds.append { [self] in cancelStart(sessionId, user: user) }
            case .success(let replies):
                let reply = replies.first ?? .null
                guard reply[0].text == "ended", let user = reply[1].text else { return }
                finishEnd(sessionId: sessionId, user: Name(unchecked: user), channels: [], kind: .leave, loggedOut: false)
            }
        }
    }

    /// One of a user's sessions over `maxSessionsPerUser`: ended in Redis by this node, wherever
    /// it is, and its connection closed with 4409 by the node that has it (told on its control
    /// channel; it then finds the session gone in Redis and only closes the connection), so the
    /// cap holds even when that message is lost.
    private func endOverTheLimit(_ sessionId: String, user: Name, node: String) {
        if node == nodeId, let session = broker.directory.session(id: sessionId) {
            broker.closeOverTheLimit(session)
            return
        }
        endRemotely(sessionId, user: user, node: node)
        if !node.isEmpty, node != nodeId { tell(node: node, .end(sessionId: sessionId, code: .sessionLimit, reason: nil)) }
    }

    /// After the reply: the user's catch-up, then, for a resume, fresh snapshots from Redis,
    /// then the kept messages, then the requests that waited.
    /// Live messages that come before the snapshots are read wait behind the kept ones
    /// (``ClusterPresence/messagesAfterSnapshots``); a session dropped again meanwhile keeps
    /// them as a held session does.
    func loggedIn(_ session: Session, then finished: @escaping () -> Void) {
        userStatus.sessionLoggedIn(session)
        guard presence.messagesAfterSnapshots[session.number] != nil else {
            finished()
            return
        }
        _ = presence.sessionResumed(session) { [self] in
            let heldLimit = configuration.limits.heldMessageBytes
            for event in presence.messagesAfterSnapshots.removeValue(forKey: session.number) ?? [] {
                broker.outbox.sendMessage(event, to: session, heldLimit: heldLimit)
            }
            finished()
        }
    }

    /// The snapshots come from Redis after the reply, then the kept messages (``loggedIn(_:then:)``).
    func resumed(_ session: Session, kept: [[UInt8]]) -> [JSON] {
        presence.messagesAfterSnapshots[session.number] = kept + (presence.messagesAfterSnapshots[session.number] ?? [])
        return session.presence.joined.keys.sorted().map(\.json)
    }

    // MARK: - Ends and holds

    /// Redis ran this node's hold of `session` (`held <id>` on the control channel, which
    /// comes after every message published before the hold): the messages this node kept for
    /// it meanwhile — Redis did not keep them, the session was live there — go to Redis ahead
    /// of those Redis kept since, so that a resume on any node gets them all, once, in order
    /// (``SessionScripts/keepHeard``; a resume waits for it). Redis out of reach: tried again at
    /// each reaper tick while the session is still held here.
    func handOverHeard(_ session: Session) {
        let heard = session.isHeld ? session.takeHeldMessages() : (events: [], dropped: 0)
        // From here on a message that reaches the held session without naming it comes after
        // a claim ran (``ClusterPresence/messagesAfterSnapshots``): it waits for the resume.
        if session.isHeld, presence.messagesAfterSnapshots[session.number] == nil { presence.messagesAfterSnapshots[session.number] = [] }
        keepHeard(session, events: Array(heard.events), dropped: heard.dropped)
    }

    private func keepHeard(_ session: Session, events: [[UInt8]], dropped: Int) {
        let keep = SessionScripts.keepHeard(prefix: keys.prefix, record: keys.user(session.userId).session(session.sessionId).record,
                                            id: session.sessionId, node: nodeId,
                                            limit: configuration.limits.heldMessageBytes, dropped: dropped, heard: events)
        call([keep]) { [self] result in
            switch result {
            case .success(let replies) where replies.first?.text == "live":
                // Resumed here meanwhile (a resume waits only so long): late, but not lost.
                deliverHeard(events, to: session)
            case .success:
                break
            case .failure:
                unfinishedEnds.append { [self] in
                    guard broker.directory.session(id: session.sessionId) === session else { return }
                    if session.isHeld {
                        keepHeard(session, events: events, dropped: dropped)
                    } else {
                        deliverHeard(events, to: session)
                    }
                }
            }
        }
    }

    private func deliverHeard(_ events: [[UInt8]], to session: Session) {
        guard session.connection != nil else { return }
        for event in events { broker.outbox.send(event, to: session) }
    }

    /// `logout`: the session ends here at once, but the reply (and close 1000) waits until
    /// Redis has the end and the user's record is stamped. A reply sent earlier would let the
    /// client's next step (on any node) be stamped before this logout: a catch-up would then
    /// list the user as changed after a session that ended later.
    func logout(_ session: Session, then done: @escaping () -> Void) {
        broker.end(session, .logout, recorded: done)
    }

    /// An abnormal drop: the session is held here and, in Redis, resumable on any node. A hold
    /// Redis did not answer (the link was down, or Redis stopped) is tried again at each reaper
    /// tick while the session is still held here: before, it stayed live in Redis for good
    /// (`heldUntil` 0), its user listed everywhere (chaos finding 6).
    func held(_ session: Session) {
        let hold = SessionScripts.hold(prefix: keys.prefix, session: keys.user(session.userId).session(session.sessionId), node: nodeId,
                                       groups: keys.groups.count)
        call([hold]) { [self] result in
            switch result {
            case .success(let replies):
                // `held <id>` after the hold ran: on one Redis every message published before
                // the hold is ahead of it on the pub/sub link (docs/cluster.md, "Delivery").
                guard replies.first?.text == "ok" else { return }
                guard refencesChannels else { return tell(node: nodeId, .held(sessionId: session.sessionId)) }
                // The channels in other slots count the session among their held ones first.
                refenceUntilAnswered(session.sessionId, in: Array(session.presence.joined.keys), owner: nodeId, held: true,
                                     from: nodeId) { [self] in
                    tell(node: nodeId, .held(sessionId: session.sessionId))
                }
            case .failure:
                unfinishedEnds.append { [self] in
                    guard session.isHeld, broker.directory.session(id: session.sessionId) === session else { return }
                    held(session)
                }
            }
        }
    }

    /// A local session ended for good: its record in Redis (only if this node still owns
    /// it), then its channels. `recorded` runs once Redis has the end (see ``endInCluster``).
    func ended(_ session: Session, _ how: SessionEnd, recorded: (() -> Void)?) {
        let channels = presence.forgetLocally(session)
        switch how {
        case .shutdown:
            // The node hands every session over at once (``shutDown()``).
            recorded?()
        case .timedOut:
            endInCluster(sessionId: session.sessionId, user: session.userId, channels: channels, kind: .timeout,
                         tokenHash: Self.tokenHash(of: session), recorded: recorded)
        case .logout, .closed:
            endInCluster(sessionId: session.sessionId, user: session.userId, channels: channels, kind: .leave,
                         loggedOut: how == .logout, tokenHash: Self.tokenHash(of: session), recorded: recorded)
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
    /// `tokenHash`: the resume token's hash this node knew for the session (nil: any), so that
    /// an end Redis runs late — the hold of a session ran out here while Redis was stopped, and
    /// its client resumed it (on this node or another) once Redis was back, before the end was
    /// retried — finds it `moved` instead of ending the resumed session behind its node's back.
    func endInCluster(sessionId: String, user: Name, channels: [ChannelKey], kind: RemovalKind, node: String? = nil,
                      loggedOut: Bool = false, tokenHash: String? = nil, retried: Bool = false, recorded: (() -> Void)? = nil) {
        let end = SessionScripts.end(prefix: keys.prefix, session: keys.user(user).session(sessionId), node: node ?? nodeId,
                                     kind: kind == .timeout ? .timeout : .leave, loggedOut: loggedOut, tokenHash: tokenHash)
        call([end]) { [self] result in
            guard case .success(let replies) = result else {
                // Redis was out of reach: the end is tried again at the next reaper tick, so the
                // session does not stay a member everywhere.
                unfinishedEnds.append { [self] in
                    endInCluster(sessionId: sessionId, user: user, channels: channels, kind: kind, node: node, loggedOut: loggedOut,
                                 tokenHash: tokenHash, retried: true)
                }
                recorded?()
                return
            }
            // The record gone: a retry whose first try ran with its answer lost (Redis stopped,
            // then ran the queued script), or a record the user's slot lost (its master failed
            // over to a replica that lacked it; session 47) — either way the channels were never
            // left. Leaving is per session and idempotent (`notin`: an end that ran elsewhere
            // left them), so leave them now. `moved`: taken over elsewhere, its memberships live on.
            let outcome = replies.first?.text
            guard outcome == "ok" || outcome == "gone" else {
                if retried {
                    userStatus.sendEnds([userStatus.endedCommand(user: user, sessionId: sessionId, loggedOut: loggedOut)],
                                        then: recorded)
                } else {
                    recorded?()
                }
                return
            }
            finishEnd(sessionId: sessionId, user: user, channels: channels, kind: kind, loggedOut: loggedOut, then: recorded)
        }
    }

    /// The rest of an end `session.end` (or the reaper) began: the session leaves `channels`,
    /// then the user's record follows (`loggedOut` after a logout of the last session), in one
    /// store call, so the record (which takes the end off `P{<g>}ending`, the reaper's safety net)
    /// never runs without the leaves before it. Redis out of reach: the whole call is tried
    /// again at the next reaper tick, until it answers; both steps are idempotent, so a call
    /// that ran but whose answer was lost changes nothing twice. `then` runs once Redis
    /// answered, or once the call was put aside for the retry.
    func finishEnd(sessionId: String, user: Name, channels: [ChannelKey], kind: RemovalKind, loggedOut: Bool,
                   then: (() -> Void)? = nil) {
        let leaves = presence.leaveCommands(sessionId: sessionId, user: user, channels: channels, kind: kind)
        let ended = userStatus.endedCommand(user: user, sessionId: sessionId, loggedOut: loggedOut)
        // Presence first, then user status (as one node): commands run in order.
        call(leaves + [ended]) { [self] result in
            switch result {
            case .failure:
                unfinishedEnds.append { [self] in
                    finishEnd(sessionId: sessionId, user: user, channels: channels, kind: kind, loggedOut: loggedOut)
                }
            case .success(let replies):
                presence.leftChannels(channels, user: user, sessionId: sessionId, replies: replies.prefix(leaves.count))
                if let last = replies.last { _ = userStatus.unwrapped(last) }
            }
            then?()
        }
    }

    /// Ends a session of `user` this node does not have, owned by `node` (`''`: no node, held
    /// after its node stopped): its record, then its channels (`leave`), then the user's
    /// record. `then` runs once Redis has the end, or once there was nothing to end, or Redis
    /// did not answer (the end is then retried at the reaper's ticks).
    func endRemotely(_ sessionId: String, user: Name, node: String = "", loggedOut: Bool = false, then: (() -> Void)? = nil) {
        let sessionKeys = keys.user(user).session(sessionId)
        call([.command(["HGET", sessionKeys.record, "user"].map(storeArgument)),
              .command(["SMEMBERS", sessionKeys.channels].map(storeArgument))]) { [self] result in
            guard case .success(let replies) = result else {
                // Redis did not answer the read: the whole end is tried again at the next
                // reaper tick (it was not retried before, and the session stayed in Redis).
                unfinishedEnds.append { [self] in endRemotely(sessionId, user: user, node: node, loggedOut: loggedOut) }
                then?()
                return
            }
            guard let user = replies.first?.text else {
                then?()
                return
            }
            let channels = ClusterKeys.channels(fromIds: replies.last)
            endInCluster(sessionId: sessionId, user: Name(unchecked: user), channels: channels, kind: .leave, node: node,
                         loggedOut: loggedOut, recorded: then)
        }
    }

    /// Publishes `message` on `node`'s control channel (nobody checks that it arrives): a
    /// routable publish (``StoreRoute``: `SPUBLISH` to the channel's master on Redis Cluster).
    func tell(node: String, _ message: ControlMessage) {
        call([.command(["PUBLISH", keys.controlChannel(of: node), message.payload].map(storeArgument))]) { _ in }
    }
}
