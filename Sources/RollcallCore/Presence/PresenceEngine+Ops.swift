import RollcallProtocol

/// The request handlers. Each validates everything first and throws before changing state.
extension PresenceEngine {
    /// `join {channel, channelType?, presence?, messages?, state?}` → `{occupancy, mode}`; the
    /// broker checked the grant and the channel cap (``Broker/checkJoinAllowed(_:from:)``).
    func join(_ request: JoinRequest, from session: Session, grant: Grant) throws(BrokerError) -> JSON {
        let key = request.channel
        let flags = request.flags
        let update = request.state
        let alreadyJoined = session.presence.joined[key] != nil
        let user = session.userId
        let existing = channels[key]?.members[user]
        let pendingTTLs = session.presence.pendingTTLs[key]
        let state = try request.mergedState(onto: existing?.state ?? .empty, pending: session.presence.pendingStates[key],
                                            limits: configuration.state)

        let channel = channel(for: key)
        channel.subscribe(session, flags: flags)
        session.presence.joined[key] = flags
        session.presence.pendingStates[key] = nil
        session.presence.pendingTTLs[key] = nil
        if var member = existing {
            if !alreadyJoined {
                member.sessionCount += 1
                channel.members[user] = member
            }
            setMemberState(user, to: state, in: channel)
        } else {
            addMember(user, state: state, info: session.grant.info, to: channel)
        }
        // A pending state's TTL starts now; the join's own keys set or clear theirs.
        let member = StateExpiries.Member(channel: key, user: user)
        let now = clock.monotonic
        for (stateKey, ttl) in pendingTTLs ?? [:] where channel.members[user]?.state.contains(stateKey) == true {
            stateExpiries.set(stateKey, of: member, deadline: now + ttl)
        }
        for entry in update?.entries ?? [] {
            stateExpiries.set(entry.key, of: member, deadline: request.ttlMs.map { now + $0 })
        }
        if flags.presence { sendSnapshot(of: channel, to: session) }
        return .object(["occupancy": .int(channel.occupancy), "mode": .string(channel.mode.rawValue)])
    }

    /// `leave {channel, channelType?}` → `{}`; `NOT_IN_CHANNEL` when this session did not join.
    func leave(_ request: LeaveRequest, from session: Session) throws(BrokerError) -> JSON {
        let key = request.channel
        guard session.presence.joined[key] != nil, let channel = channels[key] else {
            throw BrokerError(.notInChannel, "this session has not joined \(key.type.rawValue) channel \(key.name)")
        }
        removeSession(session, from: channel, kind: .leave)
        return [:]
    }

    /// `publish {channel, channelType?, message}` → `{recipients}` (live sessions sent to).
    func publish(_ request: PublishRequest, from session: Session, grant: Grant) throws(BrokerError) -> JSON {
        let key = request.channel
        try grant.checkAccess(to: key)
        let encoded = request.encodedMessage
        guard encoded.count <= configuration.limits.maxMessageBytes else {
            throw BrokerError(.messageTooLarge, "message is \(encoded.count) bytes encoded; at most \(configuration.limits.maxMessageBytes)")
        }
        if key.type == .stream, channels[key]?.members[session.userId] == nil {
            throw BrokerError(.notInChannel, "publishing to a stream channel requires joining it")
        }
        let recipients = deliverMessage(encoded, to: key, publisher: session.userId, skipping: session.number)
        return .object(["recipients": .int(recipients)])
    }

    /// Sends a `message` event from `publisher` to every session of the channel that joined
    /// with `messages: true` except session number `skipped` (held ones keep it, PROTOCOL §5);
    /// returns how many live sessions it was sent to.
    func deliverMessage(_ encoded: [UInt8], to key: ChannelKey, publisher: Name, skipping skipped: UInt64?) -> Int {
        guard let channel = channels[key], channel.messageSubscriberCount > 0 else { return 0 }
        let bytes = PresenceEvents.message(channel: key, publisher: publisher, encodedMessage: encoded, timestamp: clock.now)
        let heldLimit = configuration.limits.heldMessageBytes
        // One walk: live sessions are counted as they are sent to (held ones keep the message).
        var recipients = 0
        outbox.fanOut {
            for recipient in channel.messageSubscribers(except: skipped) {
                if recipient.connection != nil { recipients += 1 }
                outbox.sendMessage(bytes, to: recipient, heldLimit: heldLimit)
            }
        }
        return recipients
    }

    /// `setState {channel, channelType?, state}` → `{state}` (full merged state), or
    /// `{state, pending: true}` when the user is not a member: held by this session until it joins.
    func setState(_ request: SetStateRequest, from session: Session, grant: Grant) throws(BrokerError) -> JSON {
        let key = request.channel
        let update = request.update
        try grant.checkAccess(to: key)
        if let channel = channels[key], let member = channel.members[session.userId] {
            let state = try update.merged(into: member.state, limits: configuration.state)
            setMemberState(session.userId, to: state, in: channel)
            let expiring = StateExpiries.Member(channel: key, user: session.userId)
            let deadline = request.ttlMs.map { clock.monotonic + $0 }
            for entry in update.entries { stateExpiries.set(entry.key, of: expiring, deadline: deadline) }
            return .object(["state": state.json])
        }
        let held = session.presence.pendingStates[key]
        if held == nil, session.presence.pendingStates.count >= configuration.state.maxPendingChannels {
            throw BrokerError(.tooManyPendingStates, "at most \(configuration.state.maxPendingChannels) channels with state held before joining")
        }
        let state = try update.merged(into: held ?? .empty, limits: configuration.state)
        session.presence.pendingStates[key] = state.isEmpty ? nil : state
        var ttls = session.presence.pendingTTLs[key] ?? [:]
        for entry in update.entries { ttls[entry.key] = request.ttlMs }
        session.presence.pendingTTLs[key] = state.isEmpty || ttls.isEmpty ? nil : ttls
        return .object(["state": state.json, "pending": true])
    }

    /// `removeState {channel, channelType?, keys}` → `{state}`. Without membership it edits the
    /// state held for the join (`pending: true`); with neither it returns an empty state.
    func removeState(_ request: RemoveStateRequest, from session: Session) throws(BrokerError) -> JSON {
        let key = request.channel
        let keys = request.keys
        if let channel = channels[key], let member = channel.members[session.userId] {
            var state = member.state
            for stateKey in keys { state.remove(stateKey) }
            setMemberState(session.userId, to: state, in: channel)
            stateExpiries.clear(keys, of: StateExpiries.Member(channel: key, user: session.userId))
            return .object(["state": state.json])
        }
        if var held = session.presence.pendingStates[key] {
            for stateKey in keys { held.remove(stateKey) }
            session.presence.pendingStates[key] = held.isEmpty ? nil : held
            for stateKey in keys { session.presence.pendingTTLs[key]?[stateKey] = nil }
            if held.isEmpty || session.presence.pendingTTLs[key]?.isEmpty == true { session.presence.pendingTTLs[key] = nil }
            return .object(["state": held.json, "pending": true])
        }
        return .object(["state": PresenceState.empty.json])
    }

    /// `getState {channel, channelType?, userId}` → `{userId, state}`, or `USER_NOT_PRESENT`.
    func getState(_ request: GetStateRequest) throws(BrokerError) -> JSON {
        let key = request.channel
        let user = request.userId
        guard let member = channels[key]?.members[user] else {
            throw BrokerError(.userNotPresent, "\(user) is not in \(key.type.rawValue) channel \(key.name)")
        }
        return .object(["userId": .string(user.string), "state": member.state.json])
    }

    /// `getUserChannels {userId}` → `{totalChannel, channels}` from the per-user index; only
    /// the channels `grant` lets the session read (1.1).
    func getUserChannels(_ request: GetUserChannelsRequest, allowing grant: Grant = .unlimited) throws(BrokerError) -> JSON {
        userChannels.listing(of: request.userId) { grant.allows(channel: $0.name) }
    }
}
