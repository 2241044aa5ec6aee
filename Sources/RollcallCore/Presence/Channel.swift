/// How a channel reports presence changes (PROTOCOL §4).
package enum PresenceMode: String {
    /// Each change is sent as it happens.
    case announce
    /// Changes are collected and sent as one net `interval` event per interval.
    case interval
}

/// Why a member left.
package enum RemovalKind {
    /// `leave`, logout or close frame.
    case leave
    /// The hold after an abnormal drop expired.
    case timeout
}

/// One member user of a channel.
package struct ChannelMember {
    /// The user's state in the channel.
    var state: PresenceState
    /// How many of the user's sessions joined the channel (held ones included).
    var sessionCount: Int
    /// The token `info` (encoded) of the session whose join made the user a member (1.1).
    var info: [UInt8]? = nil
}

/// One session that joined a channel, with the flags of its (last) join.
package struct ChannelSubscriber {
    let session: Session
    var flags: JoinFlags
}

/// The `presence` and `messages` flags of a join.
package struct JoinFlags: Equatable, Sendable {
    package var presence: Bool
    package var messages: Bool

    /// Flags as a join sets them: presence events and snapshots, messages.
    package init(presence: Bool, messages: Bool) {
        self.presence = presence
        self.messages = messages
    }
}

/// What a user looked like at the channel's last emitted event, kept while the channel is in
/// interval mode and the user changed since then. The pending map holds one per changed
/// user, so an interval flush costs the number of changes, never the occupancy.
package struct PendingChange {
    /// Member at the last event.
    let wasPresent: Bool
    /// Their state at the last event (empty when absent).
    let stateAtLastEvent: PresenceState
    /// Their `info` at the last event (nil when absent or none).
    var infoAtLastEvent: [UInt8]? = nil
    /// The kind of their latest removal since then.
    var removal: RemovalKind?
}

/// One channel: its member users (hashed, and in byte order as of its last event), the
/// sessions that joined it, its event sequence and its announce/interval mode.
package final class Channel {
    let key: ChannelKey
    /// Member users now.
    var members: [Name: ChannelMember] = [:]
    /// The user ids of the roster as of the channel's last emitted event, in byte order:
    /// what snapshots and `getOnlineUsers` list. In announce mode every change is an event
    /// at once, so it holds the members; in interval mode joins and leaves reach it with the
    /// `interval` event that reports them (``PresenceEngine/flush(_:)``).
    var order: SortedNameList
    /// Sessions that joined, by session number, with their flags. One table: the sessions
    /// with `presence: true` and those with `messages: true` are views of it (two more
    /// tables cost ~57 B per member in the idle benchmark).
    private(set) var subscribers: [UInt64: ChannelSubscriber] = [:]
    /// Number of subscribers that joined with `messages: true`.
    private(set) var messageSubscriberCount = 0
    /// The `seq` of the last presence event emitted.
    var seq = 0
    var mode = PresenceMode.announce
    /// Interval mode: users changed since the last event.
    var pending: [Name: PendingChange] = [:]
    /// Roster pages (snapshots' and `getOnlineUsers`') encoded since the last event.
    var listingCache = ListingCache()

    init(key: ChannelKey, chunkCapacity: Int) {
        self.key = key
        self.order = SortedNameList(chunkCapacity: chunkCapacity)
    }

    /// Number of member users.
    var occupancy: Int { members.count }

    /// Members as of the last event (the size of ``order``).
    var occupancyAtLastEvent: Int { order.count }

    /// The channel emitted an event, or a member went silently: cached pages are stale.
    func listingChanged() { listingCache.removeAll() }

    /// How `user` (listed in ``order``) looked at the last event: its state and info then
    /// when it changed since, else as it is now.
    func entryAtLastEvent(_ user: Name) -> RosterEntry {
        if let pending = pending[user], pending.wasPresent {
            return (user, pending.stateAtLastEvent, pending.infoAtLastEvent)
        }
        let member = members[user]
        return (user, member?.state ?? .empty, member?.info)
    }

    /// `user`'s entry when it is a member now but was not at the last event (it joined in
    /// the pending interval); nil otherwise.
    func entryIfJoinedSinceLastEvent(_ user: Name) -> RosterEntry? {
        guard let member = members[user], let pending = pending[user], !pending.wasPresent else { return nil }
        return (user, member.state, member.info)
    }

    /// True when nothing keeps the channel alive.
    var isDead: Bool { members.isEmpty && subscribers.isEmpty && pending.isEmpty }

    /// Sessions that joined with `presence: true`.
    var presenceSubscribers: some Sequence<Session> {
        subscribers.values.lazy.filter(\.flags.presence).map(\.session)
    }

    /// Sessions that joined with `messages: true`, except session number `skipped`.
    func messageSubscribers(except skipped: UInt64?) -> some Sequence<Session> {
        subscribers.lazy.filter { $0.value.flags.messages && $0.key != skipped }.map(\.value.session)
    }

    /// Records a session's join flags (new or updated).
    func subscribe(_ session: Session, flags: JoinFlags) {
        let previous = subscribers.updateValue(ChannelSubscriber(session: session, flags: flags), forKey: session.number)
        if previous?.flags.messages == true { messageSubscriberCount -= 1 }
        if flags.messages { messageSubscriberCount += 1 }
    }

    /// Forgets a session.
    func unsubscribe(_ session: Session) {
        if subscribers.removeValue(forKey: session.number)?.flags.messages == true { messageSubscriberCount -= 1 }
    }

    /// Remembers how `user` looked at the last event, unless a change is already pending.
    func notePending(_ user: Name, wasPresent: Bool, state: PresenceState, info: [UInt8]?, removal: RemovalKind?) {
        if pending[user] == nil {
            pending[user] = PendingChange(wasPresent: wasPresent, stateAtLastEvent: state, infoAtLastEvent: info, removal: nil)
        }
        if let removal { pending[user]!.removal = removal }
    }
}
