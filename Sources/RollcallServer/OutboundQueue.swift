import DequeModule

/// A connection's queue of compact JSON objects waiting for the socket, bounded in bytes by
/// the caller (`limits.maxOutboundBytes`).
///
/// The arrays are the core's own: one encoded event shared by every recipient is stored
/// here by reference (copy-on-write, never copied) until it is copied into the write buffer.
/// A queue of one object (a quiet session's event, the common case of a broadcast) is held
/// inline: no deque storage is allocated for it and freed again when it is written
/// (BENCHMARKS.md, Issue 16 §1c). The storage is still one word, like the deque alone.
struct OutboundQueue {
    private enum Objects {
        case none
        case one([UInt8])
        case many(Deque<[UInt8]>)
    }

    private var objects = Objects.none
    /// Bytes of every queued object (without separators).
    private(set) var byteCount = 0

    var isEmpty: Bool {
        if case .none = objects { return true }
        return false
    }

    var count: Int {
        switch objects {
        case .none: return 0
        case .one: return 1
        case .many(let deque): return deque.count
        }
    }

    mutating func append(_ object: [UInt8]) {
        byteCount += object.count
        switch objects {
        case .none:
            objects = .one(object)
        case .one(let first):
            objects = .many(Deque([first, object]))
        case .many(var deque):
            objects = .none  // keeps the deque's storage uniquely referenced
            deque.append(object)
            objects = .many(deque)
        }
    }

    /// The next object, if any.
    var first: [UInt8]? {
        switch objects {
        case .none: return nil
        case .one(let object): return object
        case .many(let deque): return deque.first
        }
    }

    /// Removes and returns the next object; the queue must not be empty. Once drained the
    /// storage is given back, so an idle session holds no buffer.
    mutating func removeFirst() -> [UInt8] {
        let object: [UInt8]
        switch objects {
        case .none:
            preconditionFailure("removeFirst() on an empty OutboundQueue")
        case .one(let only):
            object = only
            objects = .none
        case .many(var deque):
            objects = .none
            object = deque.removeFirst()
            if deque.count == 1, let last = deque.first {
                objects = .one(last)
            } else if !deque.isEmpty {
                objects = .many(deque)
            }
        }
        byteCount -= object.count
        return object
    }

    /// Drops everything and releases the storage.
    mutating func removeAll() {
        objects = .none
        byteCount = 0
    }
}
