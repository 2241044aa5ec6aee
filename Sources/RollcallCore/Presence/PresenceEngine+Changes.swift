import RollcallProtocol

/// A change to one member user of a channel.
package enum MemberChange {
    case joined
    case removed(RemovalKind)
    case stateChanged

    var eventType: String {
        switch self {
        case .joined: "join"
        case .removed(.leave): "leave"
        case .removed(.timeout): "timeout"
        case .stateChanged: "stateChanged"
        }
    }
}

extension PresenceEngine {
    // MARK: - Channels

    /// The channel for `key`, created empty when absent.
    func channel(for key: ChannelKey) -> Channel {
        if let channel = channels[key] { return channel }
        let channel = Channel(key: key, chunkCapacity: memberChunkCapacity)
        channels[key] = channel
        return channel
    }

    /// Deletes a channel that has no member, no session and nothing pending.
    func deleteIfDead(_ channel: Channel) {
        guard channel.isDead else { return }
        channels[channel.key] = nil
        flushes.cancel(channel.key)
    }

    // MARK: - Membership

    /// Adds a user as a new member with `state` and the joining session's token `info`, and
    /// reports the join.
    func addMember(_ user: Name, state: PresenceState, info: [UInt8]?, to channel: Channel) {
        let occupies = channel.members.isEmpty
        let beforeJoin = outbox.actions.count
        channel.members[user] = ChannelMember(state: state, sessionCount: 1, info: info)
        userChannels.add(channel.key, for: user)
        if channel.occupancy == 1 { liveChannels.add(channel.key) }
        memberChanged(.joined, user, in: channel, wasPresent: false, previousState: .empty)
        // Made once the join has its `seq`, and put before it.
        if occupies { notifyBackendOfOccupancy("occupied", channel, at: beforeJoin) }
    }

    /// Takes a session out of a channel; when it was its user's last session there, the user
    /// leaves with `kind` (nil: silently, on shutdown) and their state is deleted.
    func removeSession(_ session: Session, from channel: Channel, kind: RemovalKind?) {
        channel.unsubscribe(session)
        session.presence.joined[channel.key] = nil
        let user = session.userId
        if var member = channel.members[user] {
            member.sessionCount -= 1
            if member.sessionCount > 0 {
                channel.members[user] = member
            } else {
                channel.members[user] = nil
                stateExpiries.forget(StateExpiries.Member(channel: channel.key, user: user))
                userChannels.remove(channel.key, for: user)
                if channel.members.isEmpty { liveChannels.remove(channel.key) }
                if let kind {
                    memberChanged(.removed(kind), user, in: channel, wasPresent: true, previousState: member.state,
                                  previousInfo: member.info)
                } else {
                    // Gone without an event (shutdown): out of the listing at once.
                    channel.pending[user] = nil
                    channel.order.remove(user)
                    channel.listingChanged()
                }
                if channel.members.isEmpty { notifyBackendOfOccupancy("vacated", channel) }
            }
        }
        deleteIfDead(channel)
    }

    /// The channel's first member arrived (`occupied`) or its last one went (`vacated`, also
    /// at shutdown): a `channel` event for the backend when webhooks want it, with the `seq`
    /// of the presence event that occupied or vacated it (the channel's latest).
    private func notifyBackendOfOccupancy(_ type: String, _ channel: Channel, at position: Int? = nil) {
        guard outbox.notifiesChannels else { return }
        let bytes = BackendEvents.channel(type, channel: channel.key, timestamp: clock.now, seq: channel.seq)
        if let position {
            outbox.insert(.notifyBackend(BackendEvent(kind: .channel, bytes: bytes)), at: position)
        } else {
            outbox.notifyBackend(.channel, bytes)
        }
    }

    /// Removes the state keys whose TTL ran out: one state change per member, with every key
    /// due at this moment (keys set together expire together).
    func expireStateKeys() {
        for (member, keys) in stateExpiries.popDue(now: clock.monotonic) {
            guard let channel = channels[member.channel], var state = channel.members[member.user]?.state else { continue }
            for key in keys { state.remove(key) }
            setMemberState(member.user, to: state, in: channel)
        }
    }

    /// Sets a member's state (the caller validated it) and reports a change.
    func setMemberState(_ user: Name, to state: PresenceState, in channel: Channel) {
        guard var member = channel.members[user], member.state != state else { return }
        let before = member.state
        member.state = state
        channel.members[user] = member
        memberChanged(.stateChanged, user, in: channel, wasPresent: true, previousState: before, previousInfo: member.info)
    }

    // MARK: - Announce and interval

    /// Reports a change already applied to `channel.members`: announced at once, or kept
    /// for the next interval event. Switches modes at the thresholds.
    func memberChanged(_ change: MemberChange, _ user: Name, in channel: Channel, wasPresent: Bool,
                       previousState: PresenceState, previousInfo: [UInt8]? = nil) {
        let limits = configuration.presence
        switch channel.mode {
        case .announce:
            if case .joined = change, channel.occupancy > limits.maxInstantEvents {
                channel.mode = .interval
                deferChange(change, user, in: channel, wasPresent: wasPresent, previousState: previousState, previousInfo: previousInfo)
            } else {
                announce(change, user, in: channel)
            }
        case .interval:
            deferChange(change, user, in: channel, wasPresent: wasPresent, previousState: previousState, previousInfo: previousInfo)
            if case .removed = change, channel.occupancy <= limits.maxInstantEvents - limits.hysteresis {
                flush(channel)
                channel.mode = .announce
            }
        }
    }

    private func deferChange(_ change: MemberChange, _ user: Name, in channel: Channel, wasPresent: Bool,
                             previousState: PresenceState, previousInfo: [UInt8]?) {
        var removal: RemovalKind?
        if case .removed(let kind) = change { removal = kind }
        channel.notePending(user, wasPresent: wasPresent, state: previousState, info: previousInfo, removal: removal)
        if !flushes.isScheduled(channel.key) {
            flushes.schedule(channel.key, at: clock.monotonic + configuration.presence.intervalSeconds.milliseconds)
        }
    }

    /// Sends one announce-mode event about `user` to every presence-enabled session of the
    /// channel except the user's own, and brings the listing up to it.
    private func announce(_ change: MemberChange, _ user: Name, in channel: Channel) {
        channel.seq += 1
        switch change {
        case .joined: channel.order.insert(user)
        case .removed: channel.order.remove(user)
        case .stateChanged: break
        }
        channel.listingChanged()
        var state: PresenceState?
        var info: [UInt8]?
        switch change {
        case .joined:
            state = channel.members[user]?.state ?? .empty
            info = channel.members[user]?.info
        case .stateChanged: state = channel.members[user]?.state ?? .empty
        case .removed: state = nil
        }
        let bytes = PresenceEvents.change(
            change.eventType, channel: channel.key, publisher: user, state: state, info: info,
            occupancy: channel.occupancy, mode: .announce, seq: channel.seq, timestamp: clock.now)
        outbox.broadcast(bytes, to: channel.presenceSubscribers.lazy.filter { $0.userId != user })
        if outbox.notifiesPresence { outbox.notifyBackend(.presence, bytes) }
    }

    /// Sends the channel's pending net change as one `interval` event (nothing when the
    /// changes cancel out), brings the listing up to it and forgets it. Costs
    /// O(changes · log n).
    func flush(_ channel: Channel) {
        flushes.cancel(channel.key)
        guard !channel.pending.isEmpty else { return }
        var change = PresenceEvents.IntervalChange()
        for (user, pending) in channel.pending {
            let member = channel.members[user]
            switch (pending.wasPresent, member) {
            case (true, nil):
                if pending.removal == .timeout { change.timeouts.append(user) } else { change.leaves.append(user) }
            case (false, let member?):
                change.joins.append(user)
                if let info = member.info { change.joinInfo.append((user, info)) }
                if !member.state.isEmpty { change.stateChanges.append((user, member.state)) }
            case (true, let member?):
                if member.state != pending.stateAtLastEvent { change.stateChanges.append((user, member.state)) }
            case (false, nil):
                break
            }
        }
        channel.pending.removeAll()
        guard !change.isEmpty else { return }
        change.joins.sort()
        change.leaves.sort()
        change.timeouts.sort()
        change.stateChanges.sort { $0.userId < $1.userId }
        change.joinInfo.sort { $0.userId < $1.userId }
        channel.seq += 1
        for user in change.joins { channel.order.insert(user) }
        for user in change.leaves { channel.order.remove(user) }
        for user in change.timeouts { channel.order.remove(user) }
        channel.listingChanged()
        let bytes = PresenceEvents.interval(
            channel: channel.key, change: change, occupancy: channel.occupancy, seq: channel.seq, timestamp: clock.now)
        outbox.broadcast(bytes, to: channel.presenceSubscribers)
        if outbox.notifiesPresence { outbox.notifyBackend(.presence, bytes) }
    }

    // MARK: - Snapshots

    /// Sends `session` a snapshot of the channel: the roster as of the last event (in
    /// announce mode, the members), plus the session's own user when it joined since (see
    /// ``rosterArray(of:after:limit:includeState:viewer:)``), so the next `interval` event
    /// applies to it exactly. Above `presence.snapshotMaxMembers` it shows the first page with
    /// `truncated` and `nextPage`.
    func sendSnapshot(of channel: Channel, to session: Session) {
        let limit = max(1, configuration.presence.snapshotMaxMembers)
        let shown = rosterArray(of: channel, after: nil, limit: limit, includeState: true, viewer: session.userId)
        let nextPage = shown.more ? shown.last.map { PageCursor.encode(after: $0) } : nil
        let bytes = PresenceEvents.snapshot(
            channel: channel.key, encodedMembers: shown.bytes, nextPage: nextPage, occupancy: shown.occupancy,
            mode: channel.mode, seq: channel.seq, timestamp: clock.now)
        outbox.send(bytes, to: session)
    }
}
