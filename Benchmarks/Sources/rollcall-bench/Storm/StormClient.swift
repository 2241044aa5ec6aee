import Foundation
import RollcallClient

/// One storm participant's view of the channel, fed from its connection's raw event lines
/// on a client service thread and read by the driver: the roster, when it last became the
/// expected final set, and counts of what arrived.
final class StormClient: @unchecked Sendable {
    /// The user number (`storm-<number>`).
    let number: Int
    private let lock = NSLock()
    private var roster: StormRoster
    /// Scans each distinct line once for every client (``StormLineCache``).
    private let lines: StormLineCache
    private var finalSince: Double?
    /// `--check-shared-scans`: the client library's roster fed the same lines, compared.
    private var check: StormScanCheck?

    private(set) var presenceEvents = 0
    private(set) var presenceBytes = 0
    private(set) var eventsByKind: [PresenceKind: Int] = [:]
    private(set) var occupancyMismatches = 0

    init(number: Int, expected: UserSet, expectedCount: Int, lines: StormLineCache) {
        self.number = number
        let members = StormMembers(expected: expected, expectedCount: expectedCount)
        roster = StormRoster(members: members)
        self.lines = lines
        if lines.checksEveryLine { check = StormScanCheck(members: members, reader: lines.reader) }
    }

    /// Applies one raw event line (called on the connection's service thread). Returns
    /// ``RosterOutcome/fetchPage(_:)`` after a truncated snapshot.
    @discardableResult
    func receive(_ line: UnsafeRawBufferPointer) -> RosterOutcome {
        let now = MonotonicSeconds.now
        let parsed = lines.event(line)
        lock.lock(); defer { lock.unlock() }
        let wasFinal = roster.members.isFinal
        let truncatedBefore = roster.truncatedSnapshots
        let outcome = roster.apply(event: parsed)
        check?.event(line, outcome: outcome, roster: roster)
        guard outcome != .ignored, let kind = roster.lastKind else { return outcome }
        defer { noteFinal(wasFinal: wasFinal, now: now) }
        presenceEvents += 1
        presenceBytes += line.count
        eventsByKind[kind, default: 0] += 1
        // The roster counts seq gaps (an event whose seq is not the last plus 1) and truncated snapshots.
        if kind != .stateChanged, roster.occupancy != roster.count, roster.truncatedSnapshots == truncatedBefore,
           roster.pendingPage == nil {
            occupancyMismatches += 1
        }
        return outcome
    }

    /// Merges one raw `getOnlineUsers` page reply fetched after a truncated snapshot, as a real
    /// client does; returns ``RosterOutcome/fetchPage(_:)`` while pages remain.
    @discardableResult
    func mergePage(_ line: UnsafeRawBufferPointer) -> RosterOutcome {
        let now = MonotonicSeconds.now
        let parsed = lines.page(line)
        lock.lock(); defer { lock.unlock() }
        let wasFinal = roster.members.isFinal
        let outcome = roster.merge(page: parsed)
        check?.page(line, outcome: outcome, roster: roster)
        if outcome != .ignored {
            pages += 1
            pageBytes += line.count
        }
        noteFinal(wasFinal: wasFinal, now: now)
        return outcome
    }

    private func noteFinal(wasFinal: Bool, now: Double) {
        if roster.members.isFinal, !wasFinal { finalSince = now } else if !roster.members.isFinal { finalSince = nil }
    }

    /// `getOnlineUsers` pages merged, and their bytes.
    private(set) var pages = 0
    private(set) var pageBytes = 0

    /// When the roster last became the final set (monotonic seconds), nil when it is not.
    var reachedFinalAt: Double? { lock.lock(); defer { lock.unlock() }; return finalSince }

    /// True when the roster is the final set now.
    var isFinal: Bool { lock.lock(); defer { lock.unlock() }; return roster.members.isFinal }

    /// Number of users in the roster now.
    var rosterCount: Int { lock.lock(); defer { lock.unlock() }; return roster.count }

    /// The counts above, read together.
    var tallies: StormTallies {
        lock.lock(); defer { lock.unlock() }
        return StormTallies(events: presenceEvents, bytes: presenceBytes, byKind: eventsByKind, seqGaps: roster.seqGaps,
                            occupancyMismatches: occupancyMismatches, truncatedSnapshots: roster.truncatedSnapshots,
                            foreignUsers: roster.foreignUsers, pages: pages, pageBytes: pageBytes,
                            scanCheckDifferences: check?.differences ?? 0)
    }
}

/// Presence counts of one or many clients.
struct StormTallies {
    var events = 0
    var bytes = 0
    var byKind: [PresenceKind: Int] = [:]
    var seqGaps = 0
    var occupancyMismatches = 0
    var truncatedSnapshots = 0
    var foreignUsers = 0
    /// `getOnlineUsers` pages fetched after truncated snapshots, and their bytes.
    var pages = 0
    var pageBytes = 0
    /// `--check-shared-scans`: lines after which the shared-scan roster differed from the
    /// client library's roster fed the same lines.
    var scanCheckDifferences = 0

    /// Adds another client's counts.
    mutating func add(_ other: StormTallies) {
        events += other.events
        bytes += other.bytes
        for (kind, count) in other.byKind { byKind[kind, default: 0] += count }
        seqGaps += other.seqGaps
        occupancyMismatches += other.occupancyMismatches
        truncatedSnapshots += other.truncatedSnapshots
        foreignUsers += other.foreignUsers
        pages += other.pages
        pageBytes += other.pageBytes
        scanCheckDifferences += other.scanCheckDifferences
    }
}

/// Reads `<prefix><number>` user ids (at most 9 digits) as their number; nil for others.
struct UserNumberReader: Sendable {
    let prefix: [UInt8]

    init(prefix: String) { self.prefix = Array(prefix.utf8) }

    func number(_ id: UnsafeRawBufferPointer) -> Int? {
        guard id.count > prefix.count, id.count - prefix.count <= 9 else { return nil }
        for index in 0..<prefix.count where id[index] != prefix[index] { return nil }
        var value = 0
        for index in prefix.count..<id.count {
            let digit = Int(id[index]) - 48
            guard digit >= 0, digit <= 9 else { return nil }
            value = value * 10 + digit
        }
        return value
    }
}
