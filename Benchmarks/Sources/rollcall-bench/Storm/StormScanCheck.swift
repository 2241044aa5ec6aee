import RollcallClient

/// `storm --check-shared-scans`: each client also feeds every line it receives to its own
/// `PresenceRoster` (the client library's path, scanned per client, as before the line cache)
/// and compares the two rosters after each line; any difference is counted. Proves on a real
/// run that sharing scans changes nothing the storm verifies (costs the bench its old CPU).
struct StormScanCheck {
    private var shadow: PresenceRoster<StormMembers>
    private let reader: UserNumberReader
    /// Lines after which the shared-scan roster and the per-client one differed.
    private(set) var differences = 0

    init(members: StormMembers, reader: UserNumberReader) {
        shadow = PresenceRoster(channel: "", members: members)
        self.reader = reader
    }

    mutating func event(_ line: UnsafeRawBufferPointer, outcome: RosterOutcome, roster: StormRoster) {
        let expected = shadow.apply(line: line, user: reader.number)
        compare(expected, outcome, roster)
    }

    mutating func page(_ line: UnsafeRawBufferPointer, outcome: RosterOutcome, roster: StormRoster) {
        let expected = shadow.mergePage(line: line, user: reader.number)
        compare(expected, outcome, roster)
    }

    private mutating func compare(_ expected: RosterOutcome, _ outcome: RosterOutcome, _ roster: StormRoster) {
        let same = expected == outcome
            && shadow.members.members.words == roster.members.members.words
            && shadow.members.isFinal == roster.members.isFinal
            && shadow.count == roster.count
            && shadow.seq == roster.seq
            && shadow.occupancy == roster.occupancy
            && shadow.pendingPage == roster.pendingPage
            && shadow.lastKind == roster.lastKind
            && shadow.seqGaps == roster.seqGaps
            && shadow.truncatedSnapshots == roster.truncatedSnapshots
            && shadow.foreignUsers == roster.foreignUsers
        if !same { differences += 1 }
    }
}
