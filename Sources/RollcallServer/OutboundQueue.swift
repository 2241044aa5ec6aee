import DequeModule

/// A connection's queue of compact JSON objects waiting for the socket, bounded in bytes by
/// the caller (`limits.maxOutboundBytes`).
///
/// The arrays are the core's own: one encoded event shared by every recipient is stored
/// here by reference (copy-on-write, never copied) until it is copied into the write buffer.
struct OutboundQueue {
    private var objects = Deque<[UInt8]>()
    /// Bytes of every queued object (without separators).
    private(set) var byteCount = 0

    var isEmpty: Bool { objects.isEmpty }
    var count: Int { objects.count }

    mutating func append(_ object: [UInt8]) {
        objects.append(object)
        byteCount += object.count
    }

    /// The next object, if any.
    var first: [UInt8]? { objects.first }

    mutating func removeFirst() -> [UInt8] {
        let object = objects.removeFirst()
        byteCount -= object.count
        if objects.isEmpty {
            // Drained: give the storage back so an idle session holds no buffer (the next
            // event allocates a small one again). Estimated at ~64 B per idle session; not
            // measurable on its own within the idle benchmark's run-to-run noise.
            removeAll()
        }
        return object
    }

    /// Drops everything and releases the storage.
    mutating func removeAll() {
        objects = Deque()
        byteCount = 0
    }
}
