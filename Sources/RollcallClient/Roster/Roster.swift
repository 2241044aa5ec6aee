import RollcallProtocol

/// A channel's roster with every member's state and info, fed with typed ``PresenceEvent``s (or
/// parsed ``Event``s, typed on the way in).
public typealias Roster = PresenceRoster<RosterMembers>

extension PresenceRoster where Storage == RosterMembers {
    /// An empty roster of one channel.
    public init(channel: String, channelType: String = "message") {
        self.init(channel: channel, channelType: channelType, members: RosterMembers())
    }

    /// An empty roster of one channel.
    public init(_ channel: ChannelRef) {
        self.init(channel: channel.channel, channelType: channel.channelType.rawValue)
    }

    /// The members in byte order of user id.
    public var sortedMembers: [RosterMember] { members.sorted }

    /// Applies one parsed event: a `presence` event of this channel is typed and applied as by
    /// ``apply(_:onChange:)-(PresenceEvent,_)``; anything else (another event, another channel, a
    /// presence event whose members do not have the documented types) is ``RosterOutcome/ignored``.
    @discardableResult
    public mutating func apply(_ event: Event, onChange: (RosterChange) -> Void = { _ in }) -> RosterOutcome {
        guard event.name == "presence", case .presence(let presence)? = try? RollcallEvent.decode(event) else { return .ignored }
        return apply(presence, onChange: onChange)
    }

    /// Applies one presence event: events of this channel edit the roster, others are
    /// ``RosterOutcome/ignored``. `onChange` sees each change made, in order.
    ///
    /// An `interval` event applies `join` (members with an empty state and their
    /// `joinInfo`), then `leave` and `timeout`, then `stateChanged` (PROTOCOL §4).
    @discardableResult
    public mutating func apply(_ event: PresenceEvent, onChange: (RosterChange) -> Void = { _ in }) -> RosterOutcome {
        guard event.channel == channel, event.channelType.rawValue == channelType else { return .ignored }
        let publisher = event.publisher ?? ""
        switch event.type {
        case .snapshot:
            beginSnapshot()
            for member in event.snapshot ?? [] { members.upsert(member) }
            onChange(.replaced(members: members.count))
        case .join:
            let fresh = members.upsert(RosterMember(userId: publisher, state: event.state ?? [:], info: event.info))
            onChange(fresh ? .joined(publisher) : .unexpected("join of \(publisher), already a member"))
        case .leave, .timeout:
            if members.remove(publisher) {
                onChange(event.type == .leave ? .left(publisher) : .timedOut(publisher))
            } else {
                onChange(.unexpected("\(event.type.rawValue) of \(publisher), not a member"))
            }
        case .stateChanged:
            setState(publisher, event.state ?? [:], onChange)
        case .interval:
            applyInterval(event.interval ?? IntervalChange(), onChange)
        }
        return finish(event.type, seq: event.seq, occupancy: event.occupancy, mode: event.mode?.rawValue,
                      truncated: event.truncated == true, nextPage: event.nextPage)
    }

    /// Merges one `getOnlineUsers` page fetched after a truncated snapshot (``RosterOutcome/fetchPage(_:)``):
    /// users not yet known are added; known ones keep what events told since. Pass the page's
    /// `users` and `nextPage`; returns ``RosterOutcome/fetchPage(_:)`` while pages remain.
    @discardableResult
    public mutating func merge(page users: [RosterMember], nextPage: String?) -> RosterOutcome {
        for member in users where members[member.userId] == nil { members.upsert(member) }
        return finishPage(nextPage: nextPage)
    }

    /// ``merge(page:nextPage:)-([RosterMember],_)`` with the page's raw `users` entries
    /// (entries that are not `{userId, state?, info?}` are skipped).
    @discardableResult
    public mutating func merge(page users: [JSON], nextPage: String?) -> RosterOutcome {
        merge(page: users.compactMap { try? $0.decode(RosterMember.self) }, nextPage: nextPage)
    }

    /// Re-reads the roster after a gap (``RosterOutcome/needsResync(expectedSeq:receivedSeq:)``):
    /// the first `getOnlineUsers` page (with `includeState: true`) replaces the members and
    /// clears ``isStale``; `seq` is the page's (v1.1) `seq`. Later pages go to ``merge(page:nextPage:)-([RosterMember],_)``.
    @discardableResult
    public mutating func resync(users: [RosterMember], seq pageSeq: Int?, nextPage: String?) -> RosterOutcome {
        members.removeAll()
        for member in users { members.upsert(member) }
        seq = pageSeq
        isStale = false
        return finishPage(nextPage: nextPage)
    }

    /// ``resync(users:seq:nextPage:)-([RosterMember],_,_)`` with the page's raw `users` entries.
    @discardableResult
    public mutating func resync(users: [JSON], seq pageSeq: Int?, nextPage: String?) -> RosterOutcome {
        resync(users: users.compactMap { try? $0.decode(RosterMember.self) }, seq: pageSeq, nextPage: nextPage)
    }

    private mutating func applyInterval(_ change: IntervalChange, _ onChange: (RosterChange) -> Void) {
        for id in change.join {
            // The viewer's own user may be listed (its snapshot already showed it).
            let fresh = members.upsert(RosterMember(userId: id, info: change.joinInfo?[id]))
            onChange(fresh ? .joined(id) : .unexpected("interval join of \(id), already a member"))
        }
        for id in change.leave {
            onChange(members.remove(id) ? .left(id) : .unexpected("interval leave of \(id), not a member"))
        }
        for id in change.timeout {
            onChange(members.remove(id) ? .timedOut(id) : .unexpected("interval timeout of \(id), not a member"))
        }
        for entry in change.stateChanged { setState(entry.userId, entry.state, onChange) }
    }

    private mutating func setState(_ id: String, _ state: [String: String], _ onChange: (RosterChange) -> Void) {
        guard var member = members[id] else {
            onChange(.unexpected("stateChanged of \(id), not a member"))
            members.upsert(RosterMember(userId: id, state: state))
            return
        }
        member.state = state
        members.upsert(member)
        onChange(.stateChanged(id))
    }
}
