import RollcallProtocol

/// A channel's roster with every member's state and info, fed with parsed ``Event``s.
public typealias Roster = PresenceRoster<RosterMembers>

extension PresenceRoster where Storage == RosterMembers {
    /// An empty roster of one channel.
    public init(channel: String, channelType: String = "message") {
        self.init(channel: channel, channelType: channelType, members: RosterMembers())
    }

    /// The members in byte order of user id.
    public var sortedMembers: [RosterMember] { members.sorted }

    /// Applies one event: presence events of this channel edit the roster, anything else is
    /// ``RosterOutcome/ignored``. `onChange` sees each change made, in order.
    ///
    /// An `interval` event applies `join` (members with an empty state and their
    /// `joinInfo`), then `leave` and `timeout`, then `stateChanged` (PROTOCOL §4).
    @discardableResult
    public mutating func apply(_ event: Event, onChange: (RosterChange) -> Void = { _ in }) -> RosterOutcome {
        guard event.name == "presence", event["channel"]?.stringValue == channel,
              (event["channelType"]?.stringValue ?? "message") == channelType,
              let kind = event.type.flatMap(PresenceKind.init(rawValue:)) else { return .ignored }
        let publisher = event["publisher"]?.stringValue ?? ""
        switch kind {
        case .snapshot:
            beginSnapshot()
            for entry in event["snapshot"]?.arrayValue ?? [] {
                if let member = Self.member(entry) { members.upsert(member) }
            }
            onChange(.replaced(members: members.count))
        case .join:
            let fresh = members.upsert(RosterMember(userId: publisher, state: Self.state(event["state"]), info: event["info"]))
            onChange(fresh ? .joined(publisher) : .unexpected("join of \(publisher), already a member"))
        case .leave, .timeout:
            if members.remove(publisher) {
                onChange(kind == .leave ? .left(publisher) : .timedOut(publisher))
            } else {
                onChange(.unexpected("\(kind.rawValue) of \(publisher), not a member"))
            }
        case .stateChanged:
            setState(publisher, Self.state(event["state"]), onChange)
        case .interval:
            applyInterval(event["interval"] ?? .null, onChange)
        }
        let truncated = event["truncated"]?.boolValue == true
        return finish(kind, seq: event["seq"]?.numberValue?.intValue, occupancy: event["occupancy"]?.numberValue?.intValue,
                      mode: event["mode"]?.stringValue, truncated: truncated, nextPage: event["nextPage"]?.stringValue)
    }

    /// Merges one `getOnlineUsers` page fetched after a truncated snapshot (``RosterOutcome/fetchPage(_:)``):
    /// users not yet known are added; known ones keep what events told since. Pass the page's
    /// `users` and `nextPage`; returns ``RosterOutcome/fetchPage(_:)`` while pages remain.
    @discardableResult
    public mutating func merge(page users: [JSON], nextPage: String?) -> RosterOutcome {
        for entry in users {
            guard let member = Self.member(entry), members[member.userId] == nil else { continue }
            members.upsert(member)
        }
        return finishPage(nextPage: nextPage)
    }

    /// Re-reads the roster after a gap (``RosterOutcome/needsResync(expectedSeq:receivedSeq:)``):
    /// the first `getOnlineUsers` page (with `includeState: true`) replaces the members and
    /// clears ``isStale``; `seq` is the page's (v1.1) `seq`. Later pages go to ``merge(page:nextPage:)``.
    @discardableResult
    public mutating func resync(users: [JSON], seq pageSeq: Int?, nextPage: String?) -> RosterOutcome {
        members.removeAll()
        for entry in users { if let member = Self.member(entry) { members.upsert(member) } }
        seq = pageSeq
        isStale = false
        return finishPage(nextPage: nextPage)
    }

    private mutating func applyInterval(_ change: JSON, _ onChange: (RosterChange) -> Void) {
        func ids(_ key: String) -> [String] { (change[key]?.arrayValue ?? []).compactMap(\.stringValue) }
        let joinInfo = change["joinInfo"]?.objectValue
        for id in ids("join") {
            // The viewer's own user may be listed (its snapshot already showed it).
            let fresh = members.upsert(RosterMember(userId: id, info: joinInfo?[id]))
            onChange(fresh ? .joined(id) : .unexpected("interval join of \(id), already a member"))
        }
        for id in ids("leave") {
            onChange(members.remove(id) ? .left(id) : .unexpected("interval leave of \(id), not a member"))
        }
        for id in ids("timeout") {
            onChange(members.remove(id) ? .timedOut(id) : .unexpected("interval timeout of \(id), not a member"))
        }
        for entry in change["stateChanged"]?.arrayValue ?? [] {
            if let id = entry["userId"]?.stringValue { setState(id, Self.state(entry["state"]), onChange) }
        }
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

    private static func member(_ entry: JSON) -> RosterMember? {
        guard let id = entry["userId"]?.stringValue else { return nil }
        return RosterMember(userId: id, state: state(entry["state"]), info: entry["info"])
    }

    private static func state(_ value: JSON?) -> [String: String] {
        var state: [String: String] = [:]
        for member in value?.objectValue?.members ?? [] { state[member.key] = member.value.stringValue ?? member.value.compactString }
        return state
    }
}
