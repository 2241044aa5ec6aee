import RollcallClient

/// One storm client's roster, fed scanned lines (``StormParsedLine``) in the order its
/// connection received them: the members as a bitset compared with the final set, and the
/// header rules of the client library's `PresenceRoster` (a snapshot replaces the roster and
/// may ask for pages; an event whose `seq` is not the last plus 1 is a gap and makes the
/// roster stale until the next snapshot).
struct StormRoster {
    private(set) var members: StormMembers
    private(set) var occupancy = 0
    private(set) var seq: Int?
    private(set) var isStale = false
    private(set) var pendingPage: String?
    private(set) var lastKind: PresenceKind?
    private(set) var seqGaps = 0
    private(set) var truncatedSnapshots = 0
    private(set) var foreignUsers = 0

    init(members: StormMembers) { self.members = members }

    var count: Int { members.count }

    /// Applies a scanned presence event (``RosterOutcome/ignored`` for other lines).
    mutating func apply(event line: StormParsedLine) -> RosterOutcome {
        guard !line.ignored, let kind = line.kind else { return .ignored }
        members.apply(line)
        foreignUsers += line.foreignUsers
        lastKind = kind
        // Every presence event of the broker carries its occupancy (PROTOCOL §4).
        occupancy = line.occupancy
        if kind == .snapshot {
            if line.truncated { truncatedSnapshots += 1 }
            seq = line.seq
            isStale = false
            pendingPage = line.truncated ? line.nextPage : nil
            return pendingPage.map(RosterOutcome.fetchPage) ?? .applied
        }
        guard let eventSeq = line.seq else { return .applied }
        defer { seq = eventSeq }
        guard let last = seq, !isStale else { return .applied }
        if eventSeq == last + 1 { return .applied }
        seqGaps += 1
        isStale = true
        return .needsResync(expectedSeq: last + 1, receivedSeq: eventSeq)
    }

    /// Merges a scanned `getOnlineUsers` page; ``RosterOutcome/fetchPage(_:)`` while pages remain.
    mutating func merge(page line: StormParsedLine) -> RosterOutcome {
        guard !line.ignored else { return .ignored }
        members.apply(line)
        foreignUsers += line.foreignUsers
        pendingPage = line.nextPage
        return line.nextPage.map(RosterOutcome.fetchPage) ?? .applied
    }
}
