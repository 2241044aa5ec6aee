import RollcallCore
import RollcallProtocol

/// Channel presence in cluster mode (PROTOCOL §9): the ops of ``PresenceEngine`` with the
/// shared truth in Redis (``PresenceScripts``) and only this node's sessions here
/// (``LocalChannel``). Every op that needs Redis answers through a completion, called when
/// the store's reply comes back into the core (``InboundEvent/storeReplied(_:_:)``).
///
/// State changes are optimistic: the node reads the member's state, computes the merge and
/// the limits in Swift (the same code as one node), and the script stores it only if the
/// state is still what was read; otherwise it reads again (at most ``maxAttempts`` times).
final class ClusterPresence {
    /// What an op answers: its result, and frames for the requesting session to follow the reply.
    typealias Answer = EngineAnswer
    /// How an op answers, once the store replied.
    typealias Completion = EngineCompletion

    let configuration: Configuration
    let keys: ClusterKeys
    let clock: BrokerClock
    let outbox: Outbox
    unowned let store: any StoreCaller
    /// The broker, for its counters (``BrokerMetrics/clusterUserStepsUnanswered``).
    unowned let broker: Broker
    /// Steps on users' slots that follow a leave (``followLeave(of:session:from:reply:)``) and
    /// that Redis did not answer: sent again at the next reaper tick (they are idempotent).
    var unansweredUserSteps: [StoreCommand] = []
    /// Sessions whose record this node is reading after a fenced answer (``fencedAnswer(sessionId:user:)``).
    var ownershipChecks: Set<String> = []
    /// A local session whose record Redis no longer gives this node (gone: nil, or the node
    /// named, `""` for none): ``ClusterSessions`` ends it here.
    var onSessionNoLongerHere: ((Session, String?) -> Void)?
    /// Channels with sessions of this node.
    var local: [ChannelKey: LocalChannel] = [:]
    /// Interval flushes this node runs (it deferred a change there).
    var flushes = TimerQueue<ChannelKey>()
    /// State-key expiries this node runs (it set the keys), by channel and user.
    var expiries = TimerQueue<ExpiringMember>()

    /// Publishes of local sessions answered `UNAVAILABLE`, by session id: sent again, each
    /// goes with its first token and event (``ClusterPresence/UncertainPublish``).
    var uncertainPublishes: [String: UncertainPublish] = [:]
    /// The number in this node's next publish token.
    var nextPublishToken: UInt64 = 0

    /// Snapshots to read again, once the store answers (a session waiting for one).
    var snapshotRetries = TimerQueue<SnapshotRetry>()
    /// Channels whose steps wait for their subscription (``whenHeard(_:_:)``), by when they
    /// stop waiting.
    var hearingDeadlines = TimerQueue<ChannelKey>()
    /// Resumed sessions whose snapshots are still being read, by session number: the
    /// messages Redis kept for them, then the live ones that came meanwhile. They go out
    /// once the snapshots are sent (PROTOCOL §5: kept messages "right after the snapshots").
    /// A session held here has an entry from its hold's `held` message on: a message that
    /// reaches it afterwards without naming it was published after a claim of it ran (it is
    /// live in Redis again), so it is newer than every message Redis kept for it.
    var messagesAfterSnapshots: [UInt64: [[UInt8]]] = [:]
    /// The most messages kept for a session held here while a claim of it may be under way
    /// (beyond, they are dropped: the claim's answer takes a round trip, and a session whose
    /// `adopted` was lost must not gather its channels' traffic until its hold ends).
    static let maxMessagesAwaitingAClaim = 1024

    /// A local session of a channel waiting for its snapshot.
    struct SnapshotRetry: Hashable {
        let channel: ChannelKey
        let session: UInt64
    }

    /// A member with TTL keys.
    struct ExpiringMember: Hashable {
        let channel: ChannelKey
        let user: Name
    }

    /// Reads of a changed state before giving up with `INTERNAL`.
    static let maxAttempts = 8

    /// This node's id: a session's changes run only on the node that owns it (fencing).
    let nodeId: String

    /// The presence engine of `broker`'s node, on the Redis keys `keys`.
    init(of broker: Broker, keys: ClusterKeys) {
        (configuration, nodeId, clock, outbox) = (broker.configuration, broker.nodeId, broker.clock, broker.outbox)
        self.keys = keys
        store = broker
        self.broker = broker
    }

    // MARK: - Ops

    /// `join`: as ``PresenceEngine/join(_:from:grant:)``, across the cluster; the broker checked
    /// the grant and the channel cap (``Broker/checkJoinAllowed(_:from:)``).
    func join(_ request: JoinRequest, from session: Session, grant: Grant, then done: @escaping Completion) throws(BrokerError) {
        let key = request.channel
        let alreadyJoined = session.presence.joined[key] != nil
        let channel = localChannel(key)
        let waitsForSnapshot = request.flags.presence
        if channel.members[session.number] != nil {
            channel.members[session.number]?.flags = request.flags
            channel.members[session.number]?.baseline = nil
        } else {
            // Messages that come before the answer wait for it: it says which were published after the join.
            channel.members[session.number] = LocalChannel.Member(session: session, flags: request.flags, baseline: nil)
            channel.messagesAwaitingJoin[session.number] = []
        }
        if waitsForSnapshot { channel.waiting += 1 }
        let guess = channel.members[session.number]?.storedState
        let deadline = requestDeadline()
        whenHeard(key) { [self] in firstAttemptJoin(request, session: session, alreadyJoined: alreadyJoined, expecting: guess,
                                                    deadline: deadline) { [self] outcome in
            switch outcome {
            case .failure(let error):
                if waitsForSnapshot { channel.waiting -= 1 }
                if !alreadyJoined {
                    channel.members[session.number] = nil
                    channel.messagesAwaitingJoin[session.number] = nil
                }
                forgetIfEmpty(key)
                done(.failure(error))
            case .success(let (reply, roster)):
                session.presence.joined[key] = request.flags
                session.presence.pendingStates[key] = nil
                session.presence.pendingTTLs[key] = nil
                var answer = Answer(result: .object(["occupancy": .int(reply.occupancy), "mode": .string(reply.mode)]))
                scheduleFlush(key, dueAndNow: reply.dueAndNow)
                scheduleExpiry(key, session.userId, earliest: reply.earliestExpiry, dueAndNow: reply.dueAndNow)
                var readsSnapshot = false
                if waitsForSnapshot {
                    if let roster {
                        channel.waiting -= 1
                        answer.after = snapshotFrames(of: key, viewer: session, seq: reply.seq, mode: reply.mode, roster: roster,
                                                      own: reply.roster, in: channel)
                    } else {
                        // It followed a read whose roster was not the one at its `seq`: read
                        // again, once for every such joiner of the channel (next tick).
                        readsSnapshot = true
                    }
                }
                done(.success(answer))
                if !alreadyJoined { joinAnswered(session, in: key, messageNumber: reply.messageNumber) }
                if readsSnapshot, local[key] === channel {
                    snapshotRetries.schedule(SnapshotRetry(channel: key, session: session.number), at: clock.monotonic)
                }
            }
        } }
    }

    /// The join's first attempt. A session's first join of a channel whose key group is not its
    /// user's runs the user's step first (``checkOwner(_:session:channelKeys:step:then:)``:
    /// the fence check on the record and the user's indexes), then the join `checked`: two
    /// scripts. Sent straight to the channel, the join would answer `first` (no fence copy
    /// there, the record in another slot), then come back after the same step: three scripts
    /// and three round trips for most first joins on Redis Cluster (BENCHMARKS.md, "On a Redis
    /// Cluster with 1024 key groups": 2.82 scripts per join). A session that joined before
    /// has its copy there: the join goes straight to the channel.
    private func firstAttemptJoin(_ request: JoinRequest, session: Session, alreadyJoined: Bool, expecting current: [UInt8]?,
                                  deadline: Timestamp,
                                  then done: @escaping (Result<(JoinScriptReply, LocalChannel.Roster?), BrokerError>) -> Void) {
        let channelKeys = keys.channel(request.channel)
        guard !alreadyJoined, !userSharesSlot(session.userId, with: channelKeys) else {
            attemptJoin(request, session: session, expecting: current, attempt: 1, checked: false, deadline: deadline, then: done)
            return
        }
        attemptJoinAfterUserStep(request, session: session, channelKeys: channelKeys, expecting: current, attempt: 1,
                                 deadline: deadline, then: done)
    }

    /// The user's step of a first join across key groups (the fence check on the session's
    /// record and the user's indexes, on the user's slot), then the join, `checked`.
    private func attemptJoinAfterUserStep(_ request: JoinRequest, session: Session, channelKeys: ClusterKeys.ChannelKeys,
                                          expecting current: [UInt8]?, attempt: Int, deadline: Timestamp,
                                          then done: @escaping (Result<(JoinScriptReply, LocalChannel.Roster?), BrokerError>) -> Void) {
        checkOwner(session.userId, session: session.sessionId, channelKeys: channelKeys, step: .join) { [self] checkedOwner in
            switch checkedOwner {
            case .failure(let error): done(.failure(error))
            case .success:
                attemptJoin(request, session: session, expecting: current, attempt: attempt, checked: true, deadline: deadline, then: done)
            }
        }
    }

    /// One attempt at the join script, expecting the user's stored state to be `current` (the
    /// session's guess, then what a `retry` answered). Succeeds with the reply and, for a
    /// joiner that asked for presence, the roster of its snapshot (``roster(replied:seq:version:held:sent:in:)``).
    /// `checked`: the session's record was checked on the user's slot (``checkOwner(_:session:channelKeys:step:then:)``)
    /// after the channel answered `first`.
    private func attemptJoin(_ request: JoinRequest, session: Session, expecting current: [UInt8]?, attempt: Int, checked: Bool,
                             deadline: Timestamp,
                             then done: @escaping (Result<(JoinScriptReply, LocalChannel.Roster?), BrokerError>) -> Void) {
        let key = request.channel
        let user = session.userId
        let channelKeys = keys.channel(key)
        let state: PresenceState
        do throws(BrokerError) {
            state = try request.mergedState(onto: current.flatMap(PresenceState.init(stored:)) ?? .empty,
                                            pending: session.presence.pendingStates[key], limits: configuration.state)
        } catch {
            done(.failure(error))
            return
        }
        let stateBytes = state.encoded
        let flags = (request.flags.presence ? "p" : "-") + (request.flags.messages ? "m" : "-")
        let channel = request.flags.presence ? local[key] : nil
        let sent = channel?.roster
        var held = sent?.held ?? .none
        // One roster read per burst: a join sent while another read of the roster is in flight
        // (interval mode) builds none when the node's copy does not hold; it copies what that
        // read brings when it is the one at its `seq`.
        held.follows = channel.map { $0.rosterReads > 0 && $0.intervalMode } ?? false
        let leads = held.follows ? nil : channel
        leads?.rosterReads += 1
        let join = PresenceScripts.join(
            channelArguments(key, channelKeys, intervalHead: true), user: user, session: session.sessionId, flags: flags,
            expected: current, newState: stateBytes,
            joinHead: PresenceEvents.head("join", channel: key, publisher: user, state: state, info: session.grant.info),
            changedHead: PresenceEvents.head("stateChanged", channel: key, publisher: user, state: state),
            encodedName: PresenceEvents.encodedName(user),
            snapshotLimit: request.flags.presence ? max(1, configuration.presence.snapshotMaxMembers) : 0,
            indexes: channelSideIndexes(user, session: session.sessionId, channelKeys), info: session.grant.info,
            sessionRecord: recordInSlot(user, session: session.sessionId, channelKeys), node: nodeId, checked: checked, held: held,
            ttl: joinTTLs(request, pending: session.presence.pendingTTLs[key], state: state))
        runScript(join) { [self] result in
            leads?.rosterReads -= 1
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(let reply):
                let decoded = JoinScriptReply(reply)
                switch decoded.outcome {
                case .ok:
                    local[key]?.members[session.number]?.storedState = stateBytes
                    var roster: LocalChannel.Roster?
                    if request.flags.presence, let channel = local[key] {
                        channel.intervalMode = decoded.mode == PresenceMode.interval.rawValue
                        if !decoded.rosterFollowed {
                            roster = self.roster(replied: decoded.roster, seq: decoded.seq, version: decoded.rosterVersion ?? 0,
                                                 held: decoded.rosterHeld, sent: sent, in: channel)
                        } else if let kept = channel.roster, kept.seq == decoded.seq, kept.version == decoded.rosterVersion {
                            roster = kept
                        }
                    }
                    done(.success((decoded, roster)))
                case .retry where attempt < Self.maxAttempts && clock.monotonic < deadline:
                    attemptJoin(request, session: session, expecting: reply[1].bytes, attempt: attempt + 1, checked: checked,
                                deadline: deadline, then: done)
                case .retry where attempt < Self.maxAttempts:
                    done(.failure(Self.deadlinePassed(configuration)))
                case .first where !checked && clock.monotonic < deadline:
                    // No fence copy here after all (the node took the session for joined), its
                    // record in another slot: the user's step, then the channel's again.
                    attemptJoinAfterUserStep(request, session: session, channelKeys: channelKeys, expecting: current,
                                             attempt: attempt, deadline: deadline, then: done)
                case .first where !checked:
                    done(.failure(Self.deadlinePassed(configuration)))
                case .fenced: done(.failure(fencedAnswer(sessionId: session.sessionId, user: user)))
                default: done(.failure(Self.unexpected(reply)))
                }
            }
        }
    }

    /// `leave`: `NOT_IN_CHANNEL` when this session did not join.
    func leave(_ request: LeaveRequest, from session: Session, then done: @escaping Completion) throws(BrokerError) {
        let key = request.channel
        guard session.presence.joined[key] != nil else {
            throw BrokerError(.notInChannel, "this session has not joined \(key.type.rawValue) channel \(key.name)")
        }
        // The node's view changes only once Redis answered: a leave answered `UNAVAILABLE`
        // (the link dropped) leaves the session joined here, and its retry completes it,
        // whether the first one ran in Redis or not (`notin` then; docs/protocol.md).
        store.call([removal(sessionId: session.sessionId, user: session.userId, from: key, kind: .leave, owner: nodeId)]) { [self] result in
            switch result {
            case .failure(let failure): done(.failure(failure.brokerError))
            case .success(let replies) where ScriptOutcome(replies.first ?? .null) == .fenced:
                done(.failure(fencedAnswer(sessionId: session.sessionId, user: session.userId)))
            case .success(let replies):
                if session.presence.joined[key] != nil { removeLocally(session, from: key) }
                scheduleFlush(key, dueAndNow: replies.first?[1] ?? .null)
                // Answered once the user's indexes in another slot follow (getUserChannels).
                followLeave(of: session.userId, session: session.sessionId, from: key, reply: replies.first ?? .null) {
                    done(.success(Answer(result: [:])))
                }
            }
        }
    }

    /// Takes an ending session out of every local channel view (no store call) and returns
    /// the channels it had joined.
    func forgetLocally(_ session: Session) -> [ChannelKey] {
        let joined = session.presence.joined.keys.sorted()
        for key in joined { removeLocally(session, from: key) }
        uncertainPublishes[session.sessionId] = nil
        messagesAfterSnapshots[session.number] = nil
        session.presence = SessionPresence()
        return joined
    }

    /// The commands that take a session out of `channels` in Redis: `leave` or `timeout`
    /// where it was its user's last session there, nothing at all for `kind` nil.
    func leaveCommands(sessionId: String, user: Name, channels: [ChannelKey], kind: RemovalKind?) -> [StoreCommand] {
        channels.map { removal(sessionId: sessionId, user: user, from: $0, kind: kind) }
    }

    /// What the `leaveCommands` for `channels` answered: the interval flushes they report.
    /// `user`'s session `sessionId` left them; the user's indexes in another slot follow
    /// (``followLeave(of:session:from:reply:)``).
    func leftChannels(_ channels: [ChannelKey], user: Name, sessionId: String, replies: ArraySlice<StoreReply>) {
        for (key, reply) in zip(channels, replies) {
            scheduleFlush(key, dueAndNow: FlushingScriptReply(reply).dueAndNow)
            followLeave(of: user, session: sessionId, from: key, reply: reply)
        }
    }

    /// The store command that takes `session` out of `channel` (`kind` nil: silently).
    /// `owner`: the node that must own the session for the removal to run (a client's own
    /// `leave`); nil for an end, whose session record is gone already.
    private func removal(sessionId: String, user: Name, from key: ChannelKey, kind: RemovalKind?, owner: String? = nil) -> StoreCommand {
        let channelKeys = keys.channel(key)
        let code: PresenceScripts.LeaveKind, head: [UInt8]
        switch kind {
        case .leave?: code = .leave; head = PresenceEvents.head("leave", channel: key, publisher: user, state: nil)
        case .timeout?: code = .timeout; head = PresenceEvents.head("timeout", channel: key, publisher: user, state: nil)
        case nil: code = .silent; head = []
        }
        return PresenceScripts.leave(channelArguments(key, channelKeys, intervalHead: false), user: user, session: sessionId, kind: code,
                                     head: head, encodedName: PresenceEvents.encodedName(user),
                                     indexes: channelSideIndexes(user, session: sessionId, channelKeys),
                                     owner: owner.map { (sessionRecord: recordInSlot(user, session: sessionId, channelKeys), node: $0) })
    }

    /// When a request that started now must have its answer: `nodeTimeoutSeconds` from now
    /// (PROTOCOL §9: no request waits longer for Redis). An op of several round trips (a read,
    /// then a script, retried when the state changed meanwhile) starts no new round trip past
    /// it, so what it answers `UNAVAILABLE` changed nothing.
    func requestDeadline() -> Timestamp { clock.monotonic + configuration.cluster.nodeTimeoutSeconds.milliseconds }

    /// The answer to a request whose deadline (``requestDeadline()``) passed before it was done.
    static func deadlinePassed(_ configuration: Configuration) -> BrokerError {
        BrokerError(.unavailable, "Redis did not answer within cluster.nodeTimeoutSeconds; nothing was changed",
                    retryAfterMs: max(100, Int(configuration.cluster.heartbeatSeconds * 1000)))
    }

    /// The answer to a change this node may not make: the session is no longer this node's
    /// (resumed elsewhere, or handed over when the others declared this node dead). The node
    /// learns which soon (an `adopted` message, or its heartbeat) and closes the connection.
    static func fenced(_ configuration: Configuration) -> BrokerError {
        BrokerError(.unavailable, "this node is rejoining the cluster; try again",
                    retryAfterMs: max(100, Int(configuration.cluster.heartbeatSeconds * 1000)))
    }

    /// `getState`: `USER_NOT_PRESENT` when the user is not a member anywhere in the cluster.
    func getState(_ request: GetStateRequest, then done: @escaping Completion) {
        let key = request.channel
        let user = request.userId
        readState(of: user, in: key) { result in
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let stored):
                guard let stored else {
                    done(.failure(BrokerError(.userNotPresent, "\(user) is not in \(key.type.rawValue) channel \(key.name)")))
                    return
                }
                done(.success(Answer(result: .object(["userId": .string(user.string), "state": .encoded(stored)]))))
            }
        }
    }

    /// `getOnlineUsers`: one page in byte order of user id of the roster as of the channel's
    /// last event, with its `seq`; the reader's own user is spliced in when it joined since
    /// (``PresenceEngine/getOnlineUsers(_:)`` does the same on one node).
    func getOnlineUsers(_ request: GetOnlineUsersRequest, then done: @escaping Completion) {
        let key = request.channel
        let page = PresenceScripts.onlineUsers(channelArguments(key, keys.channel(key), intervalHead: false), after: request.after,
                                               pageSize: request.pageSize, includeState: request.includeState,
                                               includeUserId: request.includeUserId, viewer: request.viewer)
        runScript(page) { result in
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let raw):
                let reply = OnlineUsersScriptReply(raw)
                let page = RosterPage(encodedEntries: reply.entries, includeState: request.includeState, more: reply.more)
                var insert: RosterPage.EncodedEntry?
                if request.includeUserId, let viewer = request.viewer, let own = reply.ownState, request.after.map({ $0 < viewer }) ?? true {
                    insert = RosterPage.EncodedEntry(userId: viewer, encodedState: own, info: reply.ownInfo, includeState: request.includeState)
                }
                let shown = page.array(inserting: insert, limit: request.pageSize)
                let nextPage: JSON = shown.more ? shown.last.map { .string(PageCursor.encode(after: $0)) } ?? nil : nil
                done(.success(Answer(result: .object([
                    "totalOccupancy": .int(reply.totalOccupancy), "seq": .int(reply.seq),
                    "users": .encoded(shown.bytes), "nextPage": nextPage,
                ]))))
            }
        }
    }

    /// `getUserChannels`: the channels the user is a member of, on any node.
    /// Only the channels `grant` lets the session read are listed and counted (1.1).
    ///
    /// With more than one key group the user's list (`uc:`) is kept by a step on the user's
    /// slot that follows the channel's own change: a channel it still names is listed only
    /// while the user is a member there (`ZSCORE` on the channel's `:m`, in its slot), so no
    /// reader sees a channel after the `leave` or `timeout` event that took the user out of it.
    func getUserChannels(_ request: GetUserChannelsRequest, allowing grant: Grant, then done: @escaping Completion) {
        store.call([.command([Array("ZRANGE".utf8), Array(keys.user(request.userId).channels.utf8), Array("0".utf8), Array("-1".utf8)])]) { [self] result in
            switch result {
            case .failure(let failure): done(.failure(failure.brokerError))
            case .success(let replies):
                let listed = ClusterKeys.channels(fromIds: replies.first).filter { grant.allows(channel: $0.name) }.sorted()
                confirmMembership(of: request.userId, in: listed) { confirmed in
                    done(confirmed.map { channels in
                        Answer(result: .object(["totalChannel": .int(channels.count), "channels": .array(channels.map(\.json))]))
                    })
                }
            }
        }
    }

    /// The channels of `listed` whose member set (`:m`) has `user` now; all of them when every
    /// channel shares the user's slot (one key group: the list and the members change together).
    private func confirmMembership(of user: Name, in listed: [ChannelKey],
                                   then done: @escaping (Result<[ChannelKey], BrokerError>) -> Void) {
        let elsewhere = listed.filter { !userSharesSlot(user, with: keys.channel($0)) }
        guard !elsewhere.isEmpty else { return done(.success(listed)) }
        let commands = elsewhere.map { key in
            StoreCommand.command([Array("ZSCORE".utf8), Array((keys.channel(key).base + ":m").utf8), Array(user.string.utf8)])
        }
        store.call(commands) { result in
            switch result {
            case .failure(let failure): done(.failure(failure.brokerError))
            case .success(let replies):
                let gone = Set(zip(elsewhere, replies).filter { $0.1 == .null }.map(\.0))
                done(.success(listed.filter { !gone.contains($0) }))
            }
        }
    }

    // MARK: - Support

    /// A member's state as stored (compact JSON), nil when the user is not a member
    /// (`getState`; a change reads nothing first: ``LocalChannel/Member/storedState``).
    func readState(of user: Name, in key: ChannelKey, then done: @escaping (Result<[UInt8]?, BrokerError>) -> Void) {
        store.call([.command([Array("HGET".utf8), Array((keys.channel(key).base + ":st").utf8), Array(user.string.utf8)])]) { result in
            done(result.map { $0.first?.bytes }.mapError(\.brokerError))
        }
    }

    /// Arguments 1–12 of every presence script (see ``PresenceScripts``).
    func channelArguments(_ key: ChannelKey, _ channelKeys: ClusterKeys.ChannelKeys, intervalHead: Bool) -> PresenceScripts.Channel {
        let presence = configuration.presence
        return PresenceScripts.Channel(
            base: channelKeys.base, id: channelKeys.id, events: channelKeys.events, dueFlushes: channelKeys.dueFlushes,
            dueExpiries: channelKeys.dueExpiries, webhookStream: channelKeys.webhookStream,
            maxInstantEvents: presence.maxInstantEvents, hysteresis: presence.hysteresis, intervalMs: presence.intervalSeconds.milliseconds,
            intervalHead: intervalHead ? PresenceEvents.intervalHead(channel: key) : [],
            hooks: keys.webhookHooks, channelFields: keys.webhookHooks.isEmpty ? [] : BackendEvents.channelFields(key))
    }

    /// The indexes a membership change of `user`'s session `sessionId` in `channelKeys` keeps.
    func membershipIndexes(_ user: Name, session sessionId: String, _ channelKeys: ClusterKeys.ChannelKeys) -> PresenceScripts.MembershipIndexes {
        PresenceScripts.MembershipIndexes(userChannels: keys.user(user).channels, allChannels: channelKeys.channelList,
                                          channelEntry: channelKeys.listEntry, sessionChannels: keys.user(user).session(sessionId).channels)
    }

    /// One change to a state key's deadline, as the presence scripts take it.
    enum TTLOperation {
        /// The key expires this many milliseconds from now (Redis' clock).
        case set(String, Int64)
        /// The key no longer expires.
        case clear(String)
        /// The key expired at this deadline (Redis ms): removed only if it is still that one.
        case expired(String, Int64)
    }

    /// The arguments of `operations`: a count, then (key, op, value) triples.
    static func ttlOperations(_ operations: [TTLOperation]) -> [[UInt8]] {
        var arguments: [[UInt8]] = [Array(String(operations.count).utf8)]
        for operation in operations {
            switch operation {
            case .set(let key, let ms): arguments += [Array(key.utf8), Array("s".utf8), Array(String(ms).utf8)]
            case .clear(let key): arguments += [Array(key.utf8), Array("c".utf8), []]
            case .expired(let key, let deadline): arguments += [Array(key.utf8), Array("x".utf8), Array(String(deadline).utf8)]
            }
        }
        return arguments
    }

    /// Runs one script: its reply, or the store's failure as the error a request answers
    /// (`UNAVAILABLE` with `retryAfterMs`).
    func runScript(_ command: StoreCommand, then done: @escaping (Result<StoreReply, BrokerError>) -> Void) {
        store.call([command]) { result in
            done(result.map { $0.first ?? .null }.mapError(\.brokerError))
        }
    }

    static func unexpected(_ reply: StoreReply) -> BrokerError {
        if case .error(let message) = reply { return BrokerError(.internal, "cluster store: \(message)") }
        return BrokerError(.internal, "cluster store: unexpected reply")
    }
}
