import HeapModule

/// Deadlines keyed by `Key`, earliest first. Re-arming a key replaces its deadline;
/// cancelled and replaced entries are dropped lazily when they reach the top, so every
/// operation is O(log n) and nothing is ever scanned.
package struct TimerQueue<Key: Hashable> {
    private struct Entry: Comparable {
        let deadline: Timestamp
        let generation: UInt64
        let key: Key
        static func < (a: Entry, b: Entry) -> Bool { (a.deadline, a.generation) < (b.deadline, b.generation) }
        static func == (a: Entry, b: Entry) -> Bool { a.deadline == b.deadline && a.generation == b.generation }
    }

    private var heap = Heap<Entry>()
    private var live: [Key: UInt64] = [:]
    private var nextGeneration: UInt64 = 0

    package init() {}

    /// Arms (or re-arms) `key` to fire at `deadline`.
    package mutating func schedule(_ key: Key, at deadline: Timestamp) {
        nextGeneration &+= 1
        live[key] = nextGeneration
        heap.insert(Entry(deadline: deadline, generation: nextGeneration, key: key))
        compactIfMostlyStale()
    }

    /// Disarms `key`.
    package mutating func cancel(_ key: Key) { live[key] = nil }

    /// True when `key` is armed.
    package func isScheduled(_ key: Key) -> Bool { live[key] != nil }

    /// The earliest live deadline.
    package mutating func nextDeadline() -> Timestamp? {
        dropStaleTop()
        return heap.min?.deadline
    }

    /// Removes and returns every key due at or before `now`, earliest first.
    package mutating func popDue(now: Timestamp) -> [Key] {
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
    package var count: Int { live.count }

    private mutating func dropStaleTop() {
        while let top = heap.min, live[top.key] != top.generation { heap.removeMin() }
    }

    private mutating func compactIfMostlyStale() {
        guard heap.count > 1024, heap.count > live.count * 4 else { return }
        heap = Heap(heap.unordered.filter { live[$0.key] == $0.generation })
    }
}
