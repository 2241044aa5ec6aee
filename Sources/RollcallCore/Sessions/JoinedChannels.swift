/// The channels one session joined, with the flags of its last join: a dictionary that keeps
/// its first entry inline.
///
/// Most sessions are in one channel. A one-entry Swift dictionary is a heap allocation of
/// ~130 bytes (heaptrack, idle benchmark); one channel stored inline costs the 32 bytes of the
/// enum inside ``Session``. Two or more channels use a dictionary as before.
package struct JoinedChannels: Sequence {
    package typealias Element = (key: ChannelKey, value: JoinFlags)

    private enum Storage {
        case none
        case one(ChannelKey, JoinFlags)
        case many([ChannelKey: JoinFlags])
    }

    private var storage = Storage.none

    /// Number of channels joined.
    var count: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .many(let all): all.count
        }
    }

    var isEmpty: Bool { count == 0 }

    /// The channels joined, in no particular order.
    package var keys: [ChannelKey] { map(\.key) }

    /// The flags of the join of `key`; setting nil forgets the channel.
    package subscript(key: ChannelKey) -> JoinFlags? {
        get {
            switch storage {
            case .none: nil
            case .one(let only, let flags): only == key ? flags : nil
            case .many(let all): all[key]
            }
        }
        set {
            if case .many(var all) = storage {
                storage = .none  // the only reference left is `all`: the update does not copy
                all[key] = newValue
                storage = Self.compacted(all)
                return
            }
            switch (storage, newValue) {
            case (.none, let flags?):
                storage = .one(key, flags)
            case (.one(let only, _), nil):
                if only == key { storage = .none }
            case (.one(let only, let onlyFlags), let flags?):
                storage = only == key ? .one(key, flags) : .many([only: onlyFlags, key: flags])
            case (.none, nil), (.many, _):
                return
            }
        }
    }

    /// Back to the inline form once one channel is left.
    private static func compacted(_ all: [ChannelKey: JoinFlags]) -> Storage {
        switch all.count {
        case 0: .none
        case 1: .one(all.first!.key, all.first!.value)
        default: .many(all)
        }
    }

    package func makeIterator() -> AnyIterator<Element> {
        switch storage {
        case .none:
            return AnyIterator { nil }
        case .one(let key, let flags):
            var done = false
            return AnyIterator {
                guard !done else { return nil }
                done = true
                return (key, flags)
            }
        case .many(let all):
            var inner = all.makeIterator()
            return AnyIterator { inner.next().map { ($0.key, $0.value) } }
        }
    }
}
