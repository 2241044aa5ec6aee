import Foundation

/// What a roster needs from one `{"event":"presence",…}` line, read straight from the raw
/// bytes without building a JSON tree: the event kind, the user ids it adds or removes, and
/// its `seq`/`occupancy`. Thousands of user ids per event and gigabytes per run make a full
/// parse a load generator's bottleneck; this walks each byte about once.
///
/// Keys are found by name and values walked with a small bracket- and string-aware skipper,
/// so any member order works. User ids are handed over as the raw bytes between the quotes
/// (escapes not decoded).
enum PresenceLineScanner {
    /// A change the event makes to the receiver's roster, in the order to apply it.
    enum Edit {
        /// The roster is replaced (a snapshot starts): clear it.
        case clear
        /// User id added.
        case add(UnsafeRawBufferPointer)
        /// User id removed.
        case remove(UnsafeRawBufferPointer)
    }

    /// The header of one event.
    struct Summary {
        var kind: PresenceKind
        var seq: Int?
        var occupancy: Int?
        /// A snapshot cut at `presence.snapshotMaxMembers`.
        var truncated = false
        /// The `getOnlineUsers` cursor of a truncated snapshot.
        var nextPage: String?
    }

    private static let presenceTag = Array(#""event":"presence""#.utf8)
    private static let typeKey = Array(#""type":""#.utf8)
    private static let publisherKey = Array(#""publisher":"#.utf8)
    private static let snapshotKey = Array(#""snapshot":"#.utf8)
    private static let intervalKey = Array(#""interval":"#.utf8)
    private static let occupancyKey = Array(#""occupancy":"#.utf8)
    private static let seqKey = Array(#""seq":"#.utf8)
    private static let truncatedKey = Array(#""truncated":true"#.utf8)
    private static let nextPageKey = Array(#""nextPage":""#.utf8)
    private static let usersKey = Array(#""users":"#.utf8)

    /// Scans one event line, calling `edit` for each roster change in order. Returns nil for
    /// an event that is not a presence event (or has no readable type).
    static func scan(_ line: UnsafeRawBufferPointer, edit: (Edit) -> Void) -> Summary? {
        var cursor = ByteCursor(line)
        guard cursor.contains(presenceTag) else { return nil }
        guard cursor.find(typeKey) != nil, let type = cursor.readRestOfString(),
              let kind = PresenceKind(rawValue: type) else { return nil }
        var summary = Summary(kind: kind)
        switch kind {
        case .snapshot:
            edit(.clear)
            if cursor.find(snapshotKey) != nil { scanSnapshotEntries(&cursor, edit) }
            summary.truncated = cursor.contains(truncatedKey)
            if summary.truncated { summary.nextPage = nextPage(line) }
        case .join, .leave, .timeout:
            if cursor.find(publisherKey) != nil, let user = userId(&cursor) {
                edit(kind == .join ? .add(user) : .remove(user))
            }
        case .stateChanged:
            break
        case .interval:
            if cursor.find(intervalKey) != nil { scanIntervalLists(&cursor, edit) }
        }
        summary.occupancy = cursor.integer(after: occupancyKey)
        summary.seq = cursor.integer(after: seqKey)
        return summary
    }

    /// Scans a `getOnlineUsers` reply line (`{"id":…,"ok":true,"result":{"users":[…],"nextPage":…}}`),
    /// calling `edit` with `.add` for each listed user. Returns the page's `nextPage` (nil when
    /// it is null), or nil as a whole for a line without `users`.
    static func scanPage(_ line: UnsafeRawBufferPointer, edit: (Edit) -> Void) -> (nextPage: String?, Void)? {
        var cursor = ByteCursor(line)
        guard cursor.find(usersKey) != nil else { return nil }
        scanSnapshotEntries(&cursor, edit)
        return (nextPage(line), ())
    }

    /// The string value of `nextPage` in `line`, nil when absent or null.
    private static func nextPage(_ line: UnsafeRawBufferPointer) -> String? {
        var cursor = ByteCursor(line)
        guard cursor.find(nextPageKey) != nil else { return nil }
        return cursor.readRestOfString()
    }

    /// `[{"userId":"…","state":{…}}, …]`: one `.add` per entry.
    private static func scanSnapshotEntries(_ cursor: inout ByteCursor, _ edit: (Edit) -> Void) {
        guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "[")) else { return }
        while cursor.skipSpaces(), !cursor.consume(UInt8(ascii: "]")) {
            if cursor.consume(UInt8(ascii: ",")) { continue }
            guard cursor.consume(UInt8(ascii: "{")) else { return }
            // Walk the entry's members; `userId` is the one that matters.
            while cursor.skipSpaces(), !cursor.consume(UInt8(ascii: "}")) {
                if cursor.consume(UInt8(ascii: ",")) { continue }
                guard let key = cursor.readKey() else { return }
                if key == "userId" {
                    guard let user = userId(&cursor) else { return }
                    edit(.add(user))
                } else if !cursor.skipValue() {
                    return
                }
            }
        }
    }

    /// `{"join":[…],"leave":[…],"timeout":[…],"stateChanged":[…]}`: joins added, leaves and
    /// timeouts removed (stateChanged does not change membership).
    private static func scanIntervalLists(_ cursor: inout ByteCursor, _ edit: (Edit) -> Void) {
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
                guard let user = userId(&cursor) else { return }
                edit(adds ? .add(user) : .remove(user))
            }
        }
    }

    /// Reads a string value at the cursor (after optional spaces): the bytes between its quotes.
    private static func userId(_ cursor: inout ByteCursor) -> UnsafeRawBufferPointer? {
        guard cursor.skipSpaces(), cursor.consume(UInt8(ascii: "\"")) else { return nil }
        let start = cursor.position
        guard cursor.skipRestOfString() else { return nil }
        return UnsafeRawBufferPointer(rebasing: cursor.bytes[start..<(cursor.position - 1)])
    }
}
