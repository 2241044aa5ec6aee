import RollcallProtocol

/// The channels each user is a member of (`getUserChannels`), each user's list kept sorted by
/// ``ChannelKey`` so that listing needs no sort: adding or removing is a binary search plus a
/// move of the tail. Each channel's listing entry (`{"channel":…,"channelType":…}`) is encoded
/// once and shared by every user in it, so a listing is a concatenation of ready bytes
/// (measured: 1000 channels went from ~1.2 ms with a sort and a JSON tree to tens of µs; see
/// BENCHMARKS.md, listing). Users with no channel have no entry.
package struct UserChannelIndex {
    /// Each user's channels in order, with the channel's shared entry bytes (one buffer per
    /// channel, referenced from every list: no lookup while listing).
    private var lists: [Name: [Membership]] = [:]
    /// The encoded entry of every channel some user is in, with how many users list it.
    private var entries: [ChannelKey: (bytes: [UInt8], users: Int)] = [:]

    /// Records that `user` is a member of `key` (no effect when already recorded).
    mutating func add(_ key: ChannelKey, for user: Name) {
        var list = lists.removeValue(forKey: user) ?? []
        let position = Self.insertionPoint(of: key, in: list)
        if position == list.count || list[position].key != key {
            let shared = entries[key].map { ($0.bytes, $0.users + 1) } ?? (Self.encodedEntry(key), 1)
            entries[key] = shared
            list.insert(Membership(key: key, entry: shared.0), at: position)
        }
        lists[user] = list
    }

    /// Records that `user` is no longer a member of `key`.
    mutating func remove(_ key: ChannelKey, for user: Name) {
        guard var list = lists.removeValue(forKey: user) else { return }
        let position = Self.insertionPoint(of: key, in: list)
        if position < list.count, list[position].key == key {
            list.remove(at: position)
            if let entry = entries[key] {
                entries[key] = entry.users > 1 ? (entry.bytes, entry.users - 1) : nil
            }
        }
        if !list.isEmpty { lists[user] = list }
    }

    /// True when no user is in any channel (and so no entry is kept).
    var isEmpty: Bool { lists.isEmpty && entries.isEmpty }

    /// The user's channels in order (type, then name by bytes).
    func channels(of user: Name) -> [ChannelKey] { (lists[user] ?? []).map(\.key) }

    /// The `{totalChannel, channels}` result of `getUserChannels`.
    /// Only the channels `included` accepts are listed and counted (a token's `channels`).
    func listing(of user: Name, including included: (ChannelKey) -> Bool = { _ in true }) -> JSON {
        // One walk, no filtered copy of the list (a copy retained every entry).
        let list = lists[user] ?? []
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 + list.reduce(0) { $0 + $1.entry.count + 1 })
        bytes.append(UInt8(ascii: "["))
        var count = 0
        for membership in list where included(membership.key) {
            if count > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: membership.entry)
            count += 1
        }
        bytes.append(UInt8(ascii: "]"))
        return .object(["totalChannel": .int(count), "channels": .encoded(bytes)])
    }

    /// `{"channel":…,"channelType":…}`, as ``ChannelKey/json`` would encode.
    private static func encodedEntry(_ key: ChannelKey) -> [UInt8] {
        var writer = JSONWriter(capacity: 48)
        writer.beginObject()
        writer.key("channel"); writer.string(key.name.string)
        writer.key("channelType"); writer.string(key.type.rawValue)
        writer.endObject()
        return writer.bytes
    }

    /// The first index whose key is not below `key`.
    private static func insertionPoint(of key: ChannelKey, in list: [Membership]) -> Int {
        var low = 0, high = list.count
        while low < high {
            let middle = (low + high) / 2
            if list[middle].key < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// One of a user's channels.
    private struct Membership {
        let key: ChannelKey
        /// The channel's encoded entry (the buffer in ``UserChannelIndex/entries``).
        let entry: [UInt8]
    }
}
