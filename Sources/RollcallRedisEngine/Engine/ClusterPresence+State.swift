import RollcallCore
import RollcallProtocol

/// State changes in cluster mode: `setState` and `removeState` across the cluster, and the
/// state a session holds for a channel before it joins (as on one node).
extension ClusterPresence {
    /// `setState`, or with `removing` keys `removeState`: as one node, on the member's state
    /// in Redis; without membership the state is held by the session (`pending: true`).
    func changeState(of session: Session, in key: ChannelKey, setting update: StateUpdate?, removing removed: [String],
                     ttlMs: Int64?, grant: Grant?, then done: @escaping Completion) throws(BrokerError) {
        if let grant { try grant.checkAccess(to: key) }
        let guess = local[key]?.members[session.number]?.storedState
        attemptStateChange(session, key, update, removed, ttlMs: ttlMs, expecting: guess, attempt: 1, checked: false,
                           deadline: requestDeadline(), then: done)
    }

    /// One attempt at the change, expecting the user's stored state to be `current` (the
    /// session's guess, then what a `retry` answered; nil: not a member). `checked`: the
    /// session's record was checked on the user's slot after the channel answered `first`.
    private func attemptStateChange(_ session: Session, _ key: ChannelKey, _ update: StateUpdate?, _ removed: [String],
                                    ttlMs: Int64?, expecting current: [UInt8]?, attempt: Int, checked: Bool, deadline: Timestamp,
                                    then done: @escaping Completion) {
        let user = session.userId
        let channelKeys = keys.channel(key)
        let owner = PresenceScripts.SessionOwner(session: session.sessionId, sessionRecord: recordInSlot(user, session: session.sessionId, channelKeys),
                                                 node: nodeId, checked: checked)
        let change: StoreCommand, state: PresenceState, stored: [UInt8]
        if let current {
            do throws(BrokerError) {
                (change, state, stored) = try stateChange(of: user, in: key, channelKeys, from: current, update, removed, ttlMs: ttlMs,
                                                          owner: owner)
            } catch {
                done(.failure(error))
                return
            }
        } else {
            // Not a member, as this session knows. Before the state is held for a later join
            // (`pending`), Redis confirms in one script that the session is still this
            // node's and the user still not a member: a node the others declared dead must
            // not answer `pending` for a joined session that was handed over and ended
            // (docs/protocol.md 49). An empty `expected` changes nothing.
            (state, stored) = (.empty, [])
            change = PresenceScripts.setState(channelArguments(key, channelKeys, intervalHead: false), user: user, expected: [],
                                              newState: [], head: [], encodedName: [], owner: owner, ttl: [])
        }
        runScript(change) { [self] result in
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(let reply):
                let decoded = StateScriptReply(reply)
                switch decoded.outcome {
                case .ok where current != nil:
                    local[key]?.members[session.number]?.storedState = stored
                    scheduleFlush(key, dueAndNow: decoded.dueAndNow)
                    scheduleExpiry(key, user, earliest: decoded.earliestExpiry, dueAndNow: decoded.dueAndNow)
                    done(.success(Answer(result: .object(["state": state.json]))))
                case .notMember:
                    done(Result { () throws(BrokerError) in
                        try changePendingState(of: session, in: key, update, removed, ttlMs: ttlMs)
                    })
                case .fenced:
                    done(.failure(fencedAnswer(sessionId: session.sessionId, user: user)))
                case .first where !checked && clock.monotonic < deadline:
                    // No fence copy of the session here and its record in another slot: checked
                    // there first, then the change again.
                    checkOwner(user, session: session.sessionId, channelKeys: channelKeys, step: .check) { [self] checkedOwner in
                        switch checkedOwner {
                        case .failure(let error): done(.failure(error))
                        case .success:
                            attemptStateChange(session, key, update, removed, ttlMs: ttlMs, expecting: current, attempt: attempt,
                                               checked: true, deadline: deadline, then: done)
                        }
                    }
                case .first where !checked:
                    done(.failure(Self.deadlinePassed(configuration)))
                case .retry where attempt < Self.maxAttempts && clock.monotonic < deadline:
                    attemptStateChange(session, key, update, removed, ttlMs: ttlMs, expecting: reply[1].bytes, attempt: attempt + 1,
                                       checked: checked, deadline: deadline, then: done)
                case .retry where attempt < Self.maxAttempts:
                    done(.failure(Self.deadlinePassed(configuration)))
                default:
                    done(.failure(Self.unexpected(reply)))
                }
            }
        }
    }

    /// The script that changes the member's `current` state by `update` and `removed`, the
    /// state it stores, and that state's bytes.
    private func stateChange(of user: Name, in key: ChannelKey, _ channelKeys: ClusterKeys.ChannelKeys, from current: [UInt8],
                             _ update: StateUpdate?, _ removed: [String], ttlMs: Int64?,
                             owner: PresenceScripts.SessionOwner) throws(BrokerError) -> (StoreCommand, PresenceState, [UInt8]) {
        var state = PresenceState(stored: current) ?? .empty
        for stateKey in removed { state.remove(stateKey) }
        if let update { state = try update.merged(into: state, limits: configuration.state) }
        // Keys set get their TTL, or lose it without one; removed keys lose theirs.
        var ttls: [TTLOperation] = removed.map { .clear($0) }
        for entry in update?.entries ?? [] { ttls.append(ttlMs.map { .set(entry.key, $0) } ?? .clear(entry.key)) }
        let stored = state.encoded
        let command = PresenceScripts.setState(
            channelArguments(key, channelKeys, intervalHead: false), user: user, expected: current, newState: stored,
            head: PresenceEvents.head("stateChanged", channel: key, publisher: user, state: state),
            encodedName: PresenceEvents.encodedName(user), owner: owner, ttl: ttls)
        return (command, state, stored)
    }

    /// The user is not a member: the state is held by this session for its join (as one node).
    private func changePendingState(of session: Session, in key: ChannelKey, _ update: StateUpdate?,
                                    _ removed: [String], ttlMs: Int64?) throws(BrokerError) -> Answer {
        let held = session.presence.pendingStates[key]
        guard let update else {
            guard var held else { return Answer(result: .object(["state": PresenceState.empty.json])) }
            for stateKey in removed { held.remove(stateKey) }
            session.presence.pendingStates[key] = held.isEmpty ? nil : held
            for stateKey in removed { session.presence.pendingTTLs[key]?[stateKey] = nil }
            if held.isEmpty || session.presence.pendingTTLs[key]?.isEmpty == true { session.presence.pendingTTLs[key] = nil }
            return Answer(result: .object(["state": held.json, "pending": true]))
        }
        if held == nil, session.presence.pendingStates.count >= configuration.state.maxPendingChannels {
            throw BrokerError(.tooManyPendingStates, "at most \(configuration.state.maxPendingChannels) channels with state held before joining")
        }
        let state = try update.merged(into: held ?? .empty, limits: configuration.state)
        session.presence.pendingStates[key] = state.isEmpty ? nil : state
        // A pending key's TTL starts at the join (as on one node).
        var ttls = session.presence.pendingTTLs[key] ?? [:]
        for entry in update.entries { ttls[entry.key] = ttlMs }
        session.presence.pendingTTLs[key] = state.isEmpty || ttls.isEmpty ? nil : ttls
        return Answer(result: .object(["state": state.json, "pending": true]))
    }

    /// The TTL operations of a join: a pending key's TTL starts now; the join's own keys set
    /// or clear theirs.
    func joinTTLs(_ request: JoinRequest, pending: [String: Int64]?, state: PresenceState) -> [TTLOperation] {
        var operations: [TTLOperation] = []
        for (stateKey, ttl) in (pending ?? [:]).sorted(by: { $0.key < $1.key }) where state.contains(stateKey) {
            operations.append(.set(stateKey, ttl))
        }
        for entry in request.state?.entries ?? [] {
            operations.append(request.ttlMs.map { .set(entry.key, $0) } ?? .clear(entry.key))
        }
        return operations
    }
}
