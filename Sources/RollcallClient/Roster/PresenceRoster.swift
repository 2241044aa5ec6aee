/// A channel's live roster as one client sees it (PROTOCOL §4): a `snapshot` replaces it,
/// `join`/`leave`/`timeout`/`stateChanged` and `interval` events edit it, a truncated
/// snapshot asks for the rest with `getOnlineUsers`, and a `seq` that is not the last plus 1
/// marks it stale until the next snapshot or a re-read.
///
/// One model, two inputs: parsed ``Event``s (``Roster``, with states and info) and raw event
/// lines scanned without a JSON parse (``apply(line:user:)``, membership only, for load
/// generators). The members live in a ``RosterStorage``.
///
/// Events about the client's own user never reach it but step the channel's `seq` (§4); a
/// client that changes its own presence (joins from another session, sets its state) calls
/// ``allowSkippedSeq(_:)`` so that the skip is not taken for a gap.
public struct PresenceRoster<Storage: RosterStorage> {
    /// The channel name.
    public let channel: String
    /// `message` or `stream`.
    public let channelType: String
    /// The members.
    public internal(set) var members: Storage
    /// `announce` or `interval`, from the latest event.
    public internal(set) var mode = "announce"
    /// The broker's occupancy from the latest event.
    public internal(set) var occupancy = 0
    /// The `seq` of the latest snapshot, event or re-read; nil before the first.
    public internal(set) var seq: Int?
    /// True after a `seq` gap until a snapshot or a re-read replaces the roster.
    public internal(set) var isStale = false
    /// The `nextPage` still to fetch after a truncated snapshot; nil when complete.
    public internal(set) var pendingPage: String?
    /// The kind of the latest presence event applied.
    public internal(set) var lastKind: PresenceKind?
    /// `seq` gaps seen so far.
    public internal(set) var seqGaps = 0
    /// Snapshots that came `truncated` (cut at `presence.snapshotMaxMembers`).
    public internal(set) var truncatedSnapshots = 0
    /// User ids the line path could not name in ``Storage`` (not applied).
    public internal(set) var foreignUsers = 0
    private var skipsAllowed = 0

    /// An empty roster of one channel.
    public init(channel: String, channelType: String = "message", members: Storage) {
        self.channel = channel
        self.channelType = channelType
        self.members = members
    }

    /// Number of members.
    public var count: Int { members.count }

    /// Lets the next `n` presence events skip one `seq` each without counting as a gap
    /// (events about the own user step `seq` but are not sent to it).
    public mutating func allowSkippedSeq(_ n: Int = 1) { skipsAllowed += n }

    /// A snapshot begins: the members are replaced.
    mutating func beginSnapshot() {
        members.removeAll()
    }

    /// Records an event's header after its edits were applied and says what to do next.
    mutating func finish(
        _ kind: PresenceKind, seq eventSeq: Int?, occupancy: Int?, mode: String?, truncated: Bool, nextPage: String?
    ) -> RosterOutcome {
        lastKind = kind
        if let occupancy { self.occupancy = occupancy }
        if let mode { self.mode = mode }
        if kind == .snapshot {
            if truncated { truncatedSnapshots += 1 }
            seq = eventSeq
            isStale = false
            skipsAllowed = 0
            pendingPage = truncated ? nextPage : nil
            return pendingPage.map(RosterOutcome.fetchPage) ?? .applied
        }
        guard let eventSeq else { return .applied }
        defer { seq = eventSeq }
        guard let last = seq, !isStale else { return .applied }
        if eventSeq == last + 1 { return .applied }
        if eventSeq == last + 2, skipsAllowed > 0 {
            skipsAllowed -= 1
            return .applied
        }
        seqGaps += 1
        isStale = true
        return .needsResync(expectedSeq: last + 1, receivedSeq: eventSeq)
    }

    /// The outcome of a page merged or a re-read read: another page, or done.
    mutating func finishPage(nextPage: String?) -> RosterOutcome {
        pendingPage = nextPage
        return nextPage.map(RosterOutcome.fetchPage) ?? .applied
    }
}

extension PresenceRoster: Sendable where Storage: Sendable {}

extension PresenceRoster {
    /// Applies one raw event line (`{"event":"presence",…}` as the broker writes it) without
    /// parsing it into a tree: membership only (states and info are not read), and the line
    /// must be about this roster's channel (the channel is not checked). `user` names a user
    /// id's bytes in the storage, nil for ids it cannot hold (counted in ``foreignUsers``).
    /// The buffer is only read during the call.
    public mutating func apply(line: UnsafeRawBufferPointer, user: (UnsafeRawBufferPointer) -> Storage.User?) -> RosterOutcome {
        let summary = PresenceLineScanner.scan(line) { edit in
            switch edit {
            case .clear: beginSnapshot()
            case .add(let id):
                if let name = user(id) { members.insert(name) } else { foreignUsers += 1 }
            case .remove(let id):
                if let name = user(id) { members.remove(name) } else { foreignUsers += 1 }
            }
        }
        guard let summary else { return .ignored }
        return finish(summary.kind, seq: summary.seq, occupancy: summary.occupancy, mode: nil,
                      truncated: summary.truncated, nextPage: summary.nextPage)
    }

    /// Merges a raw `getOnlineUsers` reply line fetched after a truncated snapshot
    /// (``RosterOutcome/fetchPage(_:)``) without parsing it into a tree: listed users are added
    /// (known ones stay). Returns ``RosterOutcome/fetchPage(_:)`` while pages remain,
    /// ``RosterOutcome/ignored`` for a line that is not a page.
    public mutating func mergePage(line: UnsafeRawBufferPointer, user: (UnsafeRawBufferPointer) -> Storage.User?) -> RosterOutcome {
        let page = PresenceLineScanner.scanPage(line) { edit in
            guard case .add(let id) = edit else { return }
            if let name = user(id) { members.insert(name) } else { foreignUsers += 1 }
        }
        guard let page else { return .ignored }
        return finishPage(nextPage: page.nextPage)
    }
}
