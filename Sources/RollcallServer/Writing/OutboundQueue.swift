import DequeModule

/// A connection's queue of compact JSON objects waiting for the socket, bounded in bytes by
/// the caller (`limits.maxOutboundBytes`).
///
/// The arrays are the core's own: one encoded event shared by every recipient is stored
/// here by reference (copy-on-write, never copied) until it is copied into the write buffer.
/// A queue of one object (a quiet session's event, the common case of a broadcast) is held
/// inline: no deque storage is allocated for it and freed again when it is written
/// (BENCHMARKS.md, Issue 16 §1c).
///
/// The objects after the first live in an optional deque that is mutated in place through
/// `!`, so its storage stays uniquely referenced and an append never copies the queue. (An
/// enum holding the deque as a payload could not promise that: where `append` was not
/// inlined, every append copied the whole deque — BENCHMARKS.md, Issue 16 §1d.)
struct OutboundQueue {
    /// The next object; nil only when the queue is empty.
    private(set) var first: [UInt8]?
    /// The objects after `first`; nil when there are none, so an idle session holds no buffer.
    private var rest: Deque<[UInt8]>?
    /// Bytes of every queued object (without separators).
    private(set) var byteCount = 0

    var isEmpty: Bool { first == nil }

    var count: Int {
        guard first != nil else { return 0 }
        return 1 + (rest?.count ?? 0)
    }

    mutating func append(_ object: [UInt8]) {
        byteCount += object.count
        if first == nil {
            first = object
        } else if rest == nil {
            rest = Deque([object])
        } else {
            rest!.append(object)
        }
    }

    /// Removes and returns the next object; the queue must not be empty. Once drained the
    /// storage is given back, so an idle session holds no buffer.
    mutating func removeFirst() -> [UInt8] {
        guard let object = first else { preconditionFailure("removeFirst() on an empty OutboundQueue") }
        if rest == nil {
            first = nil
        } else {
            first = rest!.removeFirst()
            if rest!.isEmpty { rest = nil }
        }
        byteCount -= object.count
        return object
    }

    /// Drops everything and releases the storage.
    mutating func removeAll() {
        first = nil
        rest = nil
        byteCount = 0
    }

    /// Where the deque behind `first` keeps its elements while they are contiguous: for tests
    /// that check an append reuses the storage instead of copying it.
    var restStorageAddress: UnsafeRawPointer? {
        rest?.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
    }
}
