import HeapModule

/// Deadlines keyed by `Key`, earliest first. Re-arming a key replaces its deadline;
/// cancelled and replaced entries are dropped lazily when they reach the top, so every
/// operation is O(log n) and nothing is ever scanned.
///
/// Inlinable, so that the modules using it (the Redis engine) get it specialized for their
/// keys: unspecialized, every call looked up generic metadata at run time, a measurable share
/// of a cluster node's CPU per op (BENCHMARKS.md, issue 28).
public struct TimerQueue<Key: Hashable> {
    @usableFromInline
    struct Entry: Comparable {
        @usableFromInline let deadline: Timestamp
        @usableFromInline let generation: UInt64
        @usableFromInline let key: Key

        @inlinable
        init(deadline: Timestamp, generation: UInt64, key: Key) {
            self.deadline = deadline
            self.generation = generation
            self.key = key
        }

        @inlinable
        static func < (a: Entry, b: Entry) -> Bool { (a.deadline, a.generation) < (b.deadline, b.generation) }
        @inlinable
        static func == (a: Entry, b: Entry) -> Bool { a.deadline == b.deadline && a.generation == b.generation }
    }

    @usableFromInline var heap = Heap<Entry>()
    @usableFromInline var live: [Key: UInt64] = [:]
    @usableFromInline var nextGeneration: UInt64 = 0

    @inlinable
    public init() {}

    /// Arms (or re-arms) `key` to fire at `deadline`.
    @inlinable
    public mutating func schedule(_ key: Key, at deadline: Timestamp) {
        nextGeneration &+= 1
        live[key] = nextGeneration
        heap.insert(Entry(deadline: deadline, generation: nextGeneration, key: key))
        compactIfMostlyStale()
    }

    /// Disarms `key`.
    @inlinable
    public mutating func cancel(_ key: Key) { live[key] = nil }

    /// True when `key` is armed.
    @inlinable
    public func isScheduled(_ key: Key) -> Bool { live[key] != nil }

    /// The earliest live deadline.
    @inlinable
    public mutating func nextDeadline() -> Timestamp? {
        dropStaleTop()
        return heap.min?.deadline
    }

    /// Removes and returns every key due at or before `now`, earliest first.
    @inlinable
    public mutating func popDue(now: Timestamp) -> [Key] {
        var due: [Key] = []
        while true {
            dropStaleTop()
            guard let top = heap.min, top.deadline <= now else { break }
            heap.removeMin()
            live[top.key] = nil
            due.append(top.key)
        }
        return due
    }

    /// Number of armed keys.
    @inlinable
    public var count: Int { live.count }

    @inlinable
    mutating func dropStaleTop() {
        while let top = heap.min, live[top.key] != top.generation { heap.removeMin() }
    }

    @inlinable
    mutating func compactIfMostlyStale() {
        guard heap.count > 1024, heap.count > live.count * 4 else { return }
        heap = Heap(heap.unordered.filter { live[$0.key] == $0.generation })
    }
}
