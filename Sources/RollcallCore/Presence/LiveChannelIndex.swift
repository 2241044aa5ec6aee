/// The channels that have at least one member, per type in byte order of name: what the
/// server API's `getChannels` pages through (PROTOCOL §10). A page costs O(log n + pageSize):
/// a seek in a ``SortedNameList``, then a walk; nothing is sorted per call.
package struct LiveChannelIndex {
    private var messageChannels: SortedNameList
    private var streamChannels: SortedNameList

    /// An empty index; `chunkCapacity` is small only in tests.
    init(chunkCapacity: Int = 256) {
        messageChannels = SortedNameList(chunkCapacity: chunkCapacity)
        streamChannels = SortedNameList(chunkCapacity: chunkCapacity)
    }

    /// Number of channels with at least one member (both types).
    var count: Int { messageChannels.count + streamChannels.count }

    /// The channel got its first member.
    mutating func add(_ key: ChannelKey) {
        switch key.type {
        case .message: messageChannels.insert(key.name)
        case .stream: streamChannels.insert(key.name)
        }
    }

    /// The channel lost its last member.
    mutating func remove(_ key: ChannelKey) {
        switch key.type {
        case .message: messageChannels.remove(key.name)
        case .stream: streamChannels.remove(key.name)
        }
    }

    /// Up to `limit` channels whose name starts with `prefix` (every channel when nil), in
    /// listing order — `message` channels, then `stream` channels, each in byte order —
    /// starting after `cursor` (from the start when nil); and whether more follow them.
    func keys(after cursor: ChannelKey?, prefix: Name?, limit: Int) -> (keys: [ChannelKey], more: Bool) {
        var keys: [ChannelKey] = []
        var more = false
        for type in [ChannelType.message, .stream] where !more {
            if let cursor, cursor.type == .stream, type == .message { continue }
            let list = type == .message ? messageChannels : streamChannels
            func visit(_ name: Name) -> Bool {
                if let prefix, !name.string.utf8.starts(with: prefix.string.utf8) { return false }
                if keys.count == limit {
                    more = true
                    return false
                }
                keys.append(ChannelKey(type: type, name: name))
                return true
            }
            let after = cursor?.type == type ? cursor?.name : nil
            if let after, prefix.map({ !(after < $0) }) ?? true {
                list.forEach(after: after, visit)
            } else if let prefix {
                list.forEach(notBefore: prefix, visit)
            } else {
                list.forEach(after: nil, visit)
            }
        }
        return (keys, more)
    }
}
