import Foundation
import RollcallClient

/// One raw presence event or `getOnlineUsers` page line, scanned once and reduced to what a
/// storm roster needs: its header and its net membership change as two bitsets over user
/// numbers (the last edit of each user wins, so applying the masks equals applying the
/// line's edits one by one, in order).
final class StormParsedLine: @unchecked Sendable {
    /// The bytes it was scanned from (compared in full before the result is reused).
    let bytes: [UInt8]
    /// ``RosterOutcome/ignored`` from the scan: not a presence event / not a page.
    let ignored: Bool
    /// The event kind (nil for a page or an ignored line).
    let kind: PresenceKind?
    let seq: Int?
    let occupancy: Int
    /// A snapshot cut at `snapshotMaxMembers`.
    let truncated: Bool
    /// The cursor of the next page to fetch (a truncated snapshot, or a page with more).
    let nextPage: String?
    /// The roster is replaced (a snapshot): members become `adds`.
    let cleared: Bool
    /// Users whose last edit adds / removes them.
    let adds: [UInt64]
    let removes: [UInt64]
    /// User ids outside `storm-0..<users`.
    let foreignUsers: Int

    /// Scans a presence event line with the client library's raw-line scanner (the path
    /// every client used before; here run once per distinct line).
    init(event line: UnsafeRawBufferPointer, users: Int, reader: UserNumberReader) {
        bytes = Array(line)
        var probe = PresenceRoster(channel: "", members: StormEditRecorder(capacity: users))
        let outcome = probe.apply(line: line, user: reader.number)
        ignored = outcome == .ignored
        kind = ignored ? nil : probe.lastKind
        seq = probe.seq
        occupancy = probe.occupancy
        truncated = probe.truncatedSnapshots > 0
        nextPage = probe.pendingPage
        cleared = probe.members.cleared
        adds = probe.members.adds.words
        removes = probe.members.removes.words
        foreignUsers = probe.foreignUsers
    }

    /// Scans a `getOnlineUsers` reply line (users are added; `nextPage` read).
    init(page line: UnsafeRawBufferPointer, users: Int, reader: UserNumberReader) {
        bytes = Array(line)
        var probe = PresenceRoster(channel: "", members: StormEditRecorder(capacity: users))
        let outcome = probe.mergePage(line: line, user: reader.number)
        ignored = outcome == .ignored
        kind = nil
        seq = nil
        occupancy = 0
        truncated = false
        if case .fetchPage(let page) = outcome { nextPage = page } else { nextPage = nil }
        cleared = false
        adds = probe.members.adds.words
        removes = probe.members.removes.words
        foreignUsers = probe.foreignUsers
    }

    /// True when `line` is byte for byte the line this was scanned from.
    func matches(_ line: UnsafeRawBufferPointer) -> Bool {
        guard line.count == bytes.count else { return false }
        guard let base = line.baseAddress else { return bytes.isEmpty }
        return bytes.withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
    }
}

/// A ``RosterStorage`` that records a line's edits instead of keeping members: the last edit
/// of each user, and whether the roster was replaced.
struct StormEditRecorder: RosterStorage {
    private(set) var adds: UserSet
    private(set) var removes: UserSet
    private(set) var cleared = false

    init(capacity: Int) {
        adds = UserSet(capacity: capacity)
        removes = UserSet(capacity: capacity)
    }

    var count: Int { 0 }

    mutating func removeAll() {
        cleared = true
        adds.removeAll()
        removes.removeAll()
    }

    @discardableResult mutating func insert(_ user: Int) -> Bool {
        removes.set(user, false)
        return adds.set(user, true)
    }

    @discardableResult mutating func remove(_ user: Int) -> Bool {
        adds.set(user, false)
        return removes.set(user, true)
    }
}

/// Every storm client in the channel receives byte-identical interval events and pages: the
/// first client to receive a line scans it, the others reuse the result after comparing the
/// whole line with the one scanned (so a client only ever applies what it received). Keyed
/// by length and a hash of the line's ends; bounded (emptied when full). Shared by the
/// client threads under a lock (held for the look-up, not the scan).
final class StormLineCache: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [Int: [StormParsedLine]] = [:]
    private var stored = 0
    private let limit = 256
    let users: Int
    let reader: UserNumberReader
    /// Lines scanned and lines served from the cache.
    private(set) var scans = 0
    private(set) var hits = 0

    /// Clients also run the client library's roster on every line and compare (``StormScanCheck``).
    let checksEveryLine: Bool

    init(users: Int, reader: UserNumberReader, checksEveryLine: Bool = false) {
        self.users = users
        self.reader = reader
        self.checksEveryLine = checksEveryLine
    }

    /// The scanned form of a presence event line.
    func event(_ line: UnsafeRawBufferPointer) -> StormParsedLine {
        lookUp(line, page: false) { StormParsedLine(event: line, users: users, reader: reader) }
    }

    /// The scanned form of a `getOnlineUsers` page line.
    func page(_ line: UnsafeRawBufferPointer) -> StormParsedLine {
        lookUp(line, page: true) { StormParsedLine(page: line, users: users, reader: reader) }
    }

    /// Lines scanned / served from the cache so far.
    var counts: (scans: Int, hits: Int) { lock.lock(); defer { lock.unlock() }; return (scans, hits) }

    private func lookUp(_ line: UnsafeRawBufferPointer, page: Bool, scan: () -> StormParsedLine) -> StormParsedLine {
        let key = Self.key(line, page: page)
        lock.lock()
        if let found = entries[key]?.first(where: { $0.matches(line) }) {
            hits += 1
            lock.unlock()
            return found
        }
        lock.unlock()
        let parsed = scan()
        lock.lock()
        scans += 1
        if stored >= limit {
            entries.removeAll(keepingCapacity: true)
            stored = 0
        }
        entries[key, default: []].append(parsed)
        stored += 1
        lock.unlock()
        return parsed
    }

    /// Length, kind of line and up to 128 bytes from each end (seq, cursor and timestamp sit
    /// near the end of the broker's lines).
    private static func key(_ line: UnsafeRawBufferPointer, page: Bool) -> Int {
        var hasher = Hasher()
        hasher.combine(line.count)
        hasher.combine(page)
        let edge = min(128, line.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: line[0..<edge]))
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: line[(line.count - edge)...]))
        return hasher.finalize()
    }
}
