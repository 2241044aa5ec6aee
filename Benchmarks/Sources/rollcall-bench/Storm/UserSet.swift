import RollcallClient

/// A fixed set of user numbers `0..<capacity` as a bitset.
struct UserSet {
    private(set) var words: [UInt64]
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        words = Array(repeating: 0, count: (capacity + 63) / 64)
    }

    func contains(_ user: Int) -> Bool {
        guard user >= 0, user < capacity else { return false }
        return words[user >> 6] & (1 << UInt64(user & 63)) != 0
    }

    /// Inserts or removes `user`; returns whether it changed anything.
    @discardableResult
    mutating func set(_ user: Int, _ present: Bool) -> Bool {
        guard user >= 0, user < capacity else { return false }
        let mask: UInt64 = 1 << UInt64(user & 63)
        let was = words[user >> 6] & mask != 0
        guard was != present else { return false }
        if present { words[user >> 6] |= mask } else { words[user >> 6] &= ~mask }
        return true
    }

    mutating func removeAll() {
        for index in words.indices { words[index] = 0 }
    }

    var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// Becomes `adds` (`replace`) or gains `adds` and loses `removes`, word by word (the masks
    /// have this set's capacity); returns the new count and the number of users in exactly
    /// one of this set and `other`.
    mutating func merge(adds: [UInt64], removes: [UInt64], replace: Bool, comparedWith other: UserSet) -> (count: Int, differences: Int) {
        var count = 0, differences = 0
        words.withUnsafeMutableBufferPointer { words in
            adds.withUnsafeBufferPointer { adds in
                removes.withUnsafeBufferPointer { removes in
                    other.words.withUnsafeBufferPointer { other in
                        for index in 0..<words.count {
                            let word = replace ? adds[index] : (words[index] | adds[index]) & ~removes[index]
                            words[index] = word
                            count += word.nonzeroBitCount
                            differences += (word ^ other[index]).nonzeroBitCount
                        }
                    }
                }
            }
        }
        return (count, differences)
    }

    /// The members in increasing order.
    var members: [Int] { (0..<capacity).filter { contains($0) } }
}

/// One storm client's members (user numbers) as a ``RosterStorage`` for the client library's
/// roster, compared at every change with the set the bench expects at the end: `mismatches`
/// counts users in exactly one of the two, so equality is known in O(1) after each edit.
struct StormMembers: RosterStorage {
    private(set) var members: UserSet
    /// The final set every remaining client must reach.
    let expected: UserSet
    private let expectedCount: Int
    /// Users in `members` xor `expected`.
    private(set) var mismatches: Int
    /// Number of members.
    private(set) var count = 0

    init(expected: UserSet, expectedCount: Int) {
        self.expected = expected
        self.expectedCount = expectedCount
        members = UserSet(capacity: expected.capacity)
        mismatches = expectedCount
    }

    /// True when the members are exactly the expected final set.
    var isFinal: Bool { mismatches == 0 }

    mutating func removeAll() {
        members.removeAll()
        count = 0
        mismatches = expectedCount
    }

    @discardableResult mutating func insert(_ user: Int) -> Bool { set(user, present: true) }

    /// Applies a scanned line's net change (its masks) at once.
    mutating func apply(_ line: StormParsedLine) {
        (count, mismatches) = members.merge(adds: line.adds, removes: line.removes, replace: line.cleared, comparedWith: expected)
    }

    @discardableResult mutating func remove(_ user: Int) -> Bool { set(user, present: false) }

    private mutating func set(_ user: Int, present: Bool) -> Bool {
        guard members.set(user, present) else { return false }
        count += present ? 1 : -1
        // The user now agrees with `expected` iff expected == present.
        mismatches += expected.contains(user) == present ? -1 : 1
        return true
    }
}
