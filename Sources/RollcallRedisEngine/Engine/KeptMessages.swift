import RollcallCore

/// The `message` events a resumed session gets after its snapshots (PROTOCOL §5), gathered
/// from where Redis kept them (``KeptMessageScripts``): first what its old node heard before
/// the hold ran in Redis, then what each channel kept since, merged in the order they were
/// published, within `heldMessageBytes` in all.
struct KeptMessages {
    /// One channel's kept entries as Redis answered them (`<ms> <order>\n<event>`), oldest
    /// first, and how many it did not fit.
    struct ChannelShare {
        var entries: [[UInt8]] = []
        var dropped = 0
    }

    /// What the old node heard before the hold, oldest first.
    var heard: [[UInt8]] = []
    /// How many of those did not fit.
    var heardDropped = 0
    /// What each channel kept.
    var channels: [ChannelKey: ChannelShare] = [:]

    /// The events to deliver, oldest first, and how many were dropped: the heard ones first,
    /// then the channels' merged by Redis time, then the key group's order, then channel
    /// (each channel's own order kept as is); an event past `limit` bytes in all is dropped
    /// and counted, as a publish does (a later, smaller one may still fit).
    func delivered(within limit: Int) -> (events: [[UInt8]], dropped: Int) {
        var events: [[UInt8]] = []
        var dropped = heardDropped
        var bytes = 0
        func offer(_ event: ArraySlice<UInt8>) {
            if bytes + event.count <= limit {
                events.append(Array(event))
                bytes += event.count
            } else {
                dropped += 1
            }
        }
        for event in heard { offer(event[...]) }
        var queues = channels.sorted { $0.key < $1.key }.map { (key: $0.key, entries: $0.value.entries.compactMap(Entry.init), next: 0) }
        dropped += channels.values.reduce(0) { $0 + $1.dropped }
        while true {
            var earliest: Int?
            for index in queues.indices where queues[index].next < queues[index].entries.count {
                let head = queues[index].entries[queues[index].next]
                if let best = earliest, !(head.precedes(queues[best].entries[queues[best].next])) { continue }
                earliest = index
            }
            guard let index = earliest else { break }
            offer(queues[index].entries[queues[index].next].event)
            queues[index].next += 1
        }
        return (events, dropped)
    }

    /// One kept entry, parsed.
    struct Entry {
        /// Redis' time of the publish (ms).
        let ms: Int64
        /// The key group's order of the publish.
        let order: Int64
        /// The encoded `message` event.
        let event: ArraySlice<UInt8>

        /// `<ms> <order>\n<event>`; nil for anything else.
        init?(_ bytes: [UInt8]) {
            guard let space = bytes.firstIndex(of: UInt8(ascii: " ")),
                  let newline = bytes[space...].firstIndex(of: UInt8(ascii: "\n")),
                  let ms = Int64(String(decoding: bytes[..<space], as: UTF8.self)),
                  let order = Int64(String(decoding: bytes[(space + 1)..<newline], as: UTF8.self)) else { return nil }
            (self.ms, self.order, event) = (ms, order, bytes[(newline + 1)...])
        }

        /// Whether it was published before `other` (ties: the channel listed first wins).
        func precedes(_ other: Entry) -> Bool {
            (ms, order) < (other.ms, other.order)
        }
    }
}
