import Foundation

/// What the storm's clients need from one `{"event":"presence",…}` line, read straight from
/// the raw bytes without building a JSON tree: the event type, the user numbers it adds or
/// removes, and its `seq`/`occupancy`. Thousands of user ids per event and gigabytes per run
/// make a full parse the bench's bottleneck; this walks each byte about once.
///
/// It relies on the broker's documented layout only loosely: keys are found by name, values
/// are walked with a small bracket- and string-aware skipper, so any member order works.
struct PresenceScanner {
    /// The kinds of presence event the roster cares about.
    enum Kind {
        case snapshot, join, leave, timeout, stateChanged, interval
    }

    /// A change the event makes to the receiver's roster, in the order to apply it.
    enum Edit {
        /// The roster is replaced (a snapshot starts): clear it.
        case clear
        /// User number added.
        case add(Int)
        /// User number removed.
        case remove(Int)
        /// A user id that is not `<prefix><number>` (counted, not applied).
        case foreign
    }

    /// The summary of one event.
    struct Summary {
        var kind: Kind?
        var seq: Int?
        var occupancy: Int?
        /// A snapshot cut at `presence.snapshotMaxMembers`.
        var truncated = false
    }

    /// The user-id prefix before the number, e.g. `storm-`.
    let userPrefix: [UInt8]

    init(userPrefix: String) { self.userPrefix = Array(userPrefix.utf8) }

    private static let presenceTag = Array(#""event":"presence""#.utf8)
    private static let typeKey = Array(#""type":""#.utf8)
    private static let publisherKey = Array(#""publisher":"#.utf8)
    private static let snapshotKey = Array(#""snapshot":"#.utf8)
    private static let intervalKey = Array(#""interval":"#.utf8)
    private static let occupancyKey = Array(#""occupancy":"#.utf8)
    private static let seqKey = Array(#""seq":"#.utf8)
    private static let truncatedKey = Array(#""truncated":true"#.utf8)

    /// Scans one event line, calling `edit` for each roster change in order. Returns nil for
    /// an event that is not a presence event (or has no readable type).
    func scan(_ line: UnsafeRawBufferPointer, edit: (Edit) -> Void) -> Summary? {
        var cursor = ByteCursor(line)
        guard cursor.contains(Self.presenceTag) else { return nil }
        guard cursor.find(Self.typeKey) != nil, let type = cursor.readRestOfString() else { return nil }
        var summary = Summary()
        switch type {
        case "snapshot":
            summary.kind = .snapshot
            edit(.clear)
            if cursor.find(Self.snapshotKey) != nil { scanSnapshotEntries(&cursor, edit) }
            summary.truncated = cursor.contains(Self.truncatedKey)
        case "join", "leave", "timeout":
            summary.kind = type == "join" ? .join : (type == "leave" ? .leave : .timeout)
            if cursor.find(Self.publisherKey) != nil, let user = userNumber(&cursor) {
                edit(type == "join" ? .add(user) : .remove(user))
            } else {
                edit(.foreign)
            }
        case "stateChanged":
            summary.kind = .stateChanged
        case "interval":
            summary.kind = .interval
            if cursor.find(Self.intervalKey) != nil { scanIntervalLists(&cursor, edit) }
        default:
            return nil
        }
        summary.occupancy = cursor.integer(after: Self.occupancyKey)
        summary.seq = cursor.integer(after: Self.seqKey)
        return summary
    }

    /// `[{"userId":"…","state":{…}}, …]`: one `.add` per entry.
    private func scanSnapshotEntries(_ cursor: inout ByteCursor, _ edit: (Edit) -> Void) {
        guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "[")) else { return }
        while cursor.skipSpaces(), !cursor.consume(UInt8(ascii: "]")) {
            if cursor.consume(UInt8(ascii: ",")) { continue }
            guard cursor.consume(UInt8(ascii: "{")) else { return }
            // Walk the entry's members; `userId` is the one that matters.
            while cursor.skipSpaces(), !cursor.consume(UInt8(ascii: "}")) {
                if cursor.consume(UInt8(ascii: ",")) { continue }
                guard let key = cursor.readKey() else { return }
                if key == "userId" {
                    guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "\"")) else { return }
                    edit(userNumber(afterQuote: &cursor).map { .add($0) } ?? .foreign)
                } else if !cursor.skipValue() {
                    return
                }
            }
        }
    }

    /// `{"join":[…],"leave":[…],"timeout":[…],"stateChanged":[…]}`: joins added, leaves and
    /// timeouts removed (stateChanged does not change membership).
    private func scanIntervalLists(_ cursor: inout ByteCursor, _ edit: (Edit) -> Void) {
        guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "{")) else { return }
        while cursor.skipSpaces(), !cursor.consume(UInt8(ascii: "}")) {
            if cursor.consume(UInt8(ascii: ",")) { continue }
            guard let key = cursor.readKey() else { return }
            let adds = key == "join"
            guard adds || key == "leave" || key == "timeout" else {
                guard cursor.skipValue() else { return }
                continue
            }
            guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "[")) else { return }
            while cursor.skipSpaces(), !cursor.consume(UInt8(ascii: "]")) {
                if cursor.consume(UInt8(ascii: ",")) { continue }
                guard cursor.consume(UInt8(ascii: "\"")) else { return }
                guard let user = userNumber(afterQuote: &cursor) else { edit(.foreign); continue }
                edit(adds ? .add(user) : .remove(user))
            }
        }
    }

    /// Reads a string value at the cursor (after optional spaces) as a user number.
    private func userNumber(_ cursor: inout ByteCursor) -> Int? {
        guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "\"")) else { return nil }
        return userNumber(afterQuote: &cursor)
    }

    /// Reads the rest of a string (the opening quote consumed) and returns its number when it
    /// is `<prefix><digits>`; the cursor ends after the closing quote either way.
    private func userNumber(afterQuote cursor: inout ByteCursor) -> Int? {
        let start = cursor.position
        guard cursor.skipRestOfString() else { return nil }
        let end = cursor.position - 1
        let count = end - start
        guard count > userPrefix.count, count - userPrefix.count <= 9 else { return nil }
        for index in 0..<userPrefix.count where cursor.bytes[start + index] != userPrefix[index] { return nil }
        var value = 0
        for index in (start + userPrefix.count)..<end {
            let digit = Int(cursor.bytes[index]) - 48
            guard digit >= 0, digit <= 9 else { return nil }
            value = value * 10 + digit
        }
        return value
    }
}
