import RollcallProtocol

/// Consecutive members of a channel's roster as of its last emitted presence event, already
/// encoded as a JSON array of `{"userId":…,"state":{…},"info":…}` entries: a `getOnlineUsers`
/// page or the members of a snapshot. Kept in the channel's ``ListingCache`` until the
/// channel emits its next event, so each page of a big roster is encoded once per event
/// however many clients read it (a join storm's late joiners all page the same roster).
///
/// The viewer's own user is not in the cached bytes when it joined since the last event;
/// ``array(inserting:limit:)`` splices it in for that one reader (snapshot and page alike).
package struct RosterPage {
    /// The user ids listed, in byte order.
    let names: [Name]
    /// `[…]`: the entries, comma-separated, in brackets.
    let encoded: [UInt8]
    /// Where each entry starts in `encoded`.
    let starts: [Int]
    /// Whether the roster has members after the last one listed.
    let more: Bool

    /// A page from its parts (`encoded` with its brackets).
    private init(names: [Name], encoded: [UInt8], starts: [Int], more: Bool) {
        self.names = names
        self.encoded = encoded
        self.starts = starts
        self.more = more
    }

    /// Encodes `entries` (consecutive members in byte order); `includeState: false` leaves
    /// out each entry's `state` (a `getOnlineUsers` page without states).
    init(entries: [RosterEntry], includeState: Bool, more: Bool) {
        self.init(names: entries.map(\.userId), capacity: 2 + entries.count * (includeState ? 64 : 24), more: more) { index, writer in
            Self.write(entries[index], includeState: includeState, to: &writer)
        }
    }

    /// Encodes one entry per name, each written by `writeEntry(index, &writer)`, into `[…]`,
    /// noting where each starts.
    package init(names: [Name], capacity: Int, more: Bool, writeEntry: (Int, inout JSONWriter) -> Void) {
        var writer = JSONWriter(capacity: capacity)
        var starts: [Int] = []
        starts.reserveCapacity(names.count)
        writer.beginArray()
        for index in names.indices {
            // The writer puts a comma before every entry but the first.
            starts.append(writer.bytes.count + (starts.isEmpty ? 0 : 1))
            writeEntry(index, &writer)
        }
        writer.endArray()
        self.init(names: names, encoded: writer.bytes, starts: starts, more: more)
    }

    /// One entry: `{"userId":…,"state":{…},"info":…}` (`state` when `includeState`, `info`
    /// when the member has one).
    package static func write(_ entry: RosterEntry, includeState: Bool, to writer: inout JSONWriter) {
        write(entry.userId, info: entry.info, includeState: includeState, to: &writer) { entry.state.write(to: &$0) }
    }

    /// The same entry with its state already encoded (`{"k":"v",…}`, as Redis keeps it).
    package static func write(_ userId: Name, encodedState: [UInt8], info: [UInt8]?, includeState: Bool, to writer: inout JSONWriter) {
        write(userId, info: info, includeState: includeState, to: &writer) { $0.raw(encodedState) }
    }

    /// The one entry layout: `userId`, `state` (written by `writeState`) when `includeState`, `info`.
    private static func write(_ userId: Name, info: [UInt8]?, includeState: Bool, to writer: inout JSONWriter,
                              state writeState: (inout JSONWriter) -> Void) {
        writer.beginObject()
        writer.key("userId"); writer.string(userId.string)
        if includeState { writer.key("state"); writeState(&writer) }
        if let info { writer.key("info"); writer.raw(info) }
        writer.endObject()
    }

    /// The encoded array for one reader, whether members follow it, and the last user it
    /// shows (for `nextPage`).
    ///
    /// - Parameters:
    ///   - insert: the reader's own user, encoded like the others, when it is a member now
    ///     but was not at the last event and sorts after the page's cursor; nil otherwise.
    ///     It is shown in its byte-order place when that place is inside this page (or just
    ///     after its end when no member follows), and the page still shows at most `limit`
    ///     users: the last one moves to the next page.
    ///   - limit: the page size the page was listed with.
    package func array(inserting insert: EncodedEntry?, limit: Int) -> (bytes: [UInt8], more: Bool, last: Name?) {
        guard let insert else { return (encoded, more, names.last) }
        let position = insertionPoint(of: insert.userId)
        guard position < names.count || !more else { return (encoded, more, names.last) }
        guard position < limit else { return (encoded, true, names.last) }
        let kept = min(names.count, limit - 1)
        let dropped = kept < names.count
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encoded.count + insert.bytes.count + 2)
        bytes.append(UInt8(ascii: "["))
        append(0..<position, to: &bytes)
        if position > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: insert.bytes)
        if position < kept {
            bytes.append(UInt8(ascii: ","))
            append(position..<kept, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        let last = position < kept ? names[kept - 1] : insert.userId
        return (bytes, more || dropped, last)
    }

    /// One entry encoded on its own (the reader's user spliced into a cached page).
    package struct EncodedEntry {
        let userId: Name
        let bytes: [UInt8]

        /// The entry of `userId` whose state comes encoded (from Redis).
        package init(userId: Name, encodedState: [UInt8], info: [UInt8]?, includeState: Bool) {
            self.userId = userId
            var writer = JSONWriter(capacity: 64 + encodedState.count + (info?.count ?? 0))
            RosterPage.write(userId, encodedState: encodedState, info: info, includeState: includeState, to: &writer)
            bytes = writer.bytes
        }

        package init(_ entry: RosterEntry, includeState: Bool) {
            userId = entry.userId
            var writer = JSONWriter(capacity: 64 + entry.state.totalBytes * 2 + (entry.info?.count ?? 0))
            RosterPage.write(entry, includeState: includeState, to: &writer)
            bytes = writer.bytes
        }
    }

    /// Appends the entries in `range`, comma-separated, with no leading or trailing comma.
    private func append(_ range: Range<Int>, to bytes: inout [UInt8]) {
        guard !range.isEmpty else { return }
        let end = range.upperBound < starts.count ? starts[range.upperBound] - 1 : encoded.count - 1
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
