import Foundation

/// One storm participant's view of the channel, fed from its connection's raw event lines
/// on a client service thread and read by the driver: the roster, when it last became the
/// expected final set, and counts of what arrived.
final class StormClient: @unchecked Sendable {
    /// The user number (`storm-<number>`).
    let number: Int
    private let lock = NSLock()
    private var roster: StormRoster
    private let scanner: PresenceScanner
    private var lastSeq: Int?
    private var finalSince: Double?

    private(set) var presenceEvents = 0
    private(set) var presenceBytes = 0
    private(set) var eventsByKind: [PresenceScanner.Kind: Int] = [:]
    private(set) var seqGaps = 0
    private(set) var occupancyMismatches = 0
    private(set) var truncatedSnapshots = 0
    private(set) var foreignUsers = 0

    init(number: Int, expected: UserSet, expectedCount: Int, scanner: PresenceScanner) {
        self.number = number
        roster = StormRoster(expected: expected, expectedCount: expectedCount)
        self.scanner = scanner
    }

    /// Applies one raw event line (called on the connection's service thread).
    func receive(_ line: UnsafeRawBufferPointer) {
        let now = MonotonicSeconds.now
        lock.lock(); defer { lock.unlock() }
        let wasFinal = roster.isFinal
        var foreign = 0
        guard let summary = scanner.scan(line, edit: { edit in
            switch edit {
            case .clear: roster.clear()
            case .add(let user): roster.set(user, present: true)
            case .remove(let user): roster.set(user, present: false)
            case .foreign: foreign += 1
            }
        }), let kind = summary.kind else { return }
        presenceEvents += 1
        presenceBytes += line.count
        eventsByKind[kind, default: 0] += 1
        foreignUsers += foreign
        if summary.truncated { truncatedSnapshots += 1 }
        // seq: a snapshot sets it; every later event must be exactly one more.
        if let seq = summary.seq {
            if kind != .snapshot, let lastSeq, seq != lastSeq + 1 { seqGaps += 1 }
            lastSeq = seq
        }
        if kind != .stateChanged, let occupancy = summary.occupancy, occupancy != roster.count, !summary.truncated {
            occupancyMismatches += 1
        }
        if roster.isFinal, !wasFinal { finalSince = now } else if !roster.isFinal { finalSince = nil }
    }

    /// When the roster last became the final set (monotonic seconds), nil when it is not.
    var reachedFinalAt: Double? { lock.lock(); defer { lock.unlock() }; return finalSince }

    /// True when the roster is the final set now.
    var isFinal: Bool { lock.lock(); defer { lock.unlock() }; return roster.isFinal }

    /// Number of users in the roster now.
    var rosterCount: Int { lock.lock(); defer { lock.unlock() }; return roster.count }

    /// The counts above, read together.
    var tallies: StormTallies {
        lock.lock(); defer { lock.unlock() }
        return StormTallies(events: presenceEvents, bytes: presenceBytes, byKind: eventsByKind, seqGaps: seqGaps,
                            occupancyMismatches: occupancyMismatches, truncatedSnapshots: truncatedSnapshots,
                            foreignUsers: foreignUsers)
    }
}

/// Presence counts of one or many clients.
struct StormTallies {
    var events = 0
    var bytes = 0
    var byKind: [PresenceScanner.Kind: Int] = [:]
    var seqGaps = 0
    var occupancyMismatches = 0
    var truncatedSnapshots = 0
    var foreignUsers = 0

    /// Adds another client's counts.
    mutating func add(_ other: StormTallies) {
        events += other.events
        bytes += other.bytes
        for (kind, count) in other.byKind { byKind[kind, default: 0] += count }
        seqGaps += other.seqGaps
        occupancyMismatches += other.occupancyMismatches
        truncatedSnapshots += other.truncatedSnapshots
        foreignUsers += other.foreignUsers
    }
}
