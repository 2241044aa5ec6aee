import RollcallEventLoop

/// Which key groups' webhook streams (`P{<group>}wh`) a node has lately sent scripts that may
/// write to, so that its ``WebhookStream`` takes from those at once instead of asking every
/// group at every poll (docs/cluster.md, "Key groups and buckets"). The node's link marks a
/// group when it sends a script that declares that group's stream as a key (every channel
/// script that may write webhook events does); the taker, on the same loop, reads the marks.
/// A mark is a hint, not a record: it lasts ``holdMs`` (a script waits at most that long
/// between being sent and running in Redis), and whatever a mark misses — or another node
/// left — the taker's sweep of every group finds within `claimIdleMs`.
public final class WebhookStreamGroups {
    /// How long a mark keeps its group in the taker's turns (ms).
    static let holdMs: Int64 = 5000

    /// `P{`, the start of every group's stream key.
    private let head: [UInt8]
    private var marks: [Int: Int64] = [:]

    /// The marks of a cluster under `prefix`.
    init(prefix: String) {
        head = Array((prefix + "{").utf8)
    }

    /// Group `group`'s stream may get an event from now on (`now`: a monotonic clock in ms).
    func mark(_ group: Int, now: Int64 = MonotonicClock.now) {
        marks[group] = now
    }

    /// Marks the group of each of `keys` that is a group's webhook stream, `P{<group>}wh`.
    func markStreams(among keys: ArraySlice<[UInt8]>, now: Int64 = MonotonicClock.now) {
        for key in keys {
            if let group = streamGroup(key) { marks[group] = now }
        }
    }

    /// The groups marked within ``holdMs`` of `now`; older marks are forgotten.
    func recent(now: Int64 = MonotonicClock.now) -> Set<Int> {
        marks = marks.filter { now - $0.value <= Self.holdMs }
        return Set(marks.keys)
    }

    /// The group of `key` when it is `P{<group>}wh`; nil otherwise.
    func streamGroup(_ key: [UInt8]) -> Int? {
        guard key.count > head.count + 3, key.starts(with: head),
              key[key.count - 3] == UInt8(ascii: "}"), key[key.count - 2] == UInt8(ascii: "w"), key[key.count - 1] == UInt8(ascii: "h")
        else { return nil }
        var group = 0
        for byte in key[head.count..<(key.count - 3)] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), group < 1_000_000 else { return nil }
            group = group * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return group
    }
}
