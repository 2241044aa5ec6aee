import RollcallProtocol

/// The first `limit` members of a channel's roster as of its last emitted presence event,
/// with their states, already encoded as snapshot entries; kept on the ``Channel`` while it
/// is in interval mode with changes pending.
///
/// In interval mode every joiner's snapshot shows that same roster (plus the joiner), and it
/// only changes when the channel emits an event. Building it once per interval and copying
/// the bytes for each joiner replaces a walk of the whole member list, a hash lookup per
/// member and a fresh JSON encoding of up to `snapshotMaxMembers` entries per join — the
/// join storm's dominant cost (measured with callgrind: ~75% of the broker's instructions).
///
/// The channel drops it (``Channel/snapshotRoster`` = nil) whenever the roster as of the
/// last event changes: an announced change, an interval event, a silent removal.
struct SnapshotRoster {
    /// The channel's `seq` when it was built (a second guard besides the explicit drops).
    let seq: Int
    /// The `limit` it was built for (`presence.snapshotMaxMembers`).
    let limit: Int
    /// How many members the roster has in all (the snapshot's occupancy, before the viewer).
    let total: Int
    /// The first `min(total, limit)` user ids, in byte order.
    let names: [Name]
    /// `{"userId":…,"state":{…}}` entries separated by commas.
    let encoded: [UInt8]
    /// Where each entry starts in `encoded`.
    let starts: [Int]

    /// A roster from its parts.
    init(seq: Int, limit: Int, total: Int, names: [Name], encoded: [UInt8], starts: [Int]) {
        self.seq = seq
        self.limit = limit
        self.total = total
        self.names = names
        self.encoded = encoded
        self.starts = starts
    }

    /// Encodes `entries` (the first members, in byte order) of a roster of `total` members.
    init(seq: Int, limit: Int, total: Int, entries: [RosterEntry]) {
        self.seq = seq
        self.limit = limit
        self.total = total
        names = entries.map(\.userId)
        var writer = JSONWriter(capacity: 64 + entries.count * 40)
        var starts: [Int] = []
        starts.reserveCapacity(entries.count)
        for entry in entries {
            // The writer puts a comma before every entry but the first.
            starts.append(writer.bytes.count + (starts.isEmpty ? 0 : 1))
            PresenceEvents.entry(&writer, entry.userId, entry.state, info: entry.info)
        }
        encoded = writer.bytes
        self.starts = starts
    }

    /// The encoded `[…]` snapshot array for a viewer, its member count, whether members
    /// were cut at `limit`, and the last user shown (for `nextPage`).
    ///
    /// - Parameter insert: the viewer's user and current state when the viewer is a member
    ///   now but was not at the last event (it is shown in its byte-order place); nil when
    ///   the roster already holds the viewer's user, or the viewer is not a member.
    func array(inserting insert: RosterEntry?)
        -> (bytes: [UInt8], occupancy: Int, more: Bool, last: Name?)
    {
        let occupancy = total + (insert == nil ? 0 : 1)
        let shownCount = min(occupancy, limit)
        let more = occupancy > limit
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.count + 256)
        bytes.append(UInt8(ascii: "["))
        guard let insert else {
            append(0..<shownCount, to: &bytes)
            bytes.append(UInt8(ascii: "]"))
            return (bytes, occupancy, more, shownCount > 0 ? names[shownCount - 1] : nil)
        }
        let position = insertionPoint(of: insert.userId)
        guard position < shownCount else {
            // The viewer sorts after everything shown: not in this page.
            append(0..<shownCount, to: &bytes)
            bytes.append(UInt8(ascii: "]"))
            return (bytes, occupancy, more, shownCount > 0 ? names[shownCount - 1] : nil)
        }
        append(0..<position, to: &bytes)
        if position > 0 { bytes.append(UInt8(ascii: ",")) }
        var writer = JSONWriter(capacity: 64 + insert.state.totalBytes * 2 + (insert.info?.count ?? 0))
        PresenceEvents.entry(&writer, insert.userId, insert.state, info: insert.info)
        bytes.append(contentsOf: writer.bytes)
        let after = position..<(shownCount - 1)
        if !after.isEmpty {
            bytes.append(UInt8(ascii: ","))
            append(after, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        let last = after.isEmpty ? insert.userId : names[after.upperBound - 1]
        return (bytes, occupancy, more, last)
    }

    /// Appends the entries in `range`, comma-separated, with no leading or trailing comma.
    private func append(_ range: Range<Int>, to bytes: inout [UInt8]) {
        guard !range.isEmpty else { return }
        let end = range.upperBound < starts.count ? starts[range.upperBound] - 1 : encoded.count
        bytes.append(contentsOf: encoded[starts[range.lowerBound]..<end])
    }

    /// The index of the first name not below `user` (byte order).
    private func insertionPoint(of user: Name) -> Int {
        var low = 0, high = names.count
        while low < high {
            let mid = (low + high) / 2
            if names[mid] < user { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
