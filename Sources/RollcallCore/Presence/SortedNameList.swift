/// A set of ``Name``s kept in byte order, stored as a list of sorted chunks (a flat,
/// one-level B-tree). It backs the member listings of a channel.
///
/// With `n` names and chunks of at most `chunkCapacity` names:
/// - `insert` / `remove`: O(log n + chunkCapacity) (binary search over the chunks' last
///   names, then within one chunk, then a shift inside that chunk; a split or merge moves
///   one chunk's worth of names and shifts `n / chunkCapacity` chunk references);
/// - `names(after:limit:)`: O(log n + limit) — a seek for the first name greater than the
///   cursor, then a walk along the chunks. Nothing is ever sorted per call.
package struct SortedNameList {
    /// Most names one chunk holds before it is split in two.
    let chunkCapacity: Int
    private(set) var chunks: [[Name]] = []
    /// Number of names.
    private(set) var count = 0

    /// An empty list; `chunkCapacity` is small only in tests.
    init(chunkCapacity: Int = 256) {
        precondition(chunkCapacity >= 2)
        self.chunkCapacity = chunkCapacity
    }

    /// True when the list holds no name.
    var isEmpty: Bool { count == 0 }

    /// Inserts `name`; false when it was already there.
    @discardableResult
    mutating func insert(_ name: Name) -> Bool {
        guard !chunks.isEmpty else {
            chunks.append([name])
            count = 1
            return true
        }
        let chunkIndex = min(firstChunk(withLastAtLeast: name), chunks.count - 1)
        let index = Self.lowerBound(of: name, in: chunks[chunkIndex])
        if index < chunks[chunkIndex].count, chunks[chunkIndex][index] == name { return false }
        chunks[chunkIndex].insert(name, at: index)
        count += 1
        if chunks[chunkIndex].count > chunkCapacity {
            let half = chunks[chunkIndex].count / 2
            let upper = Array(chunks[chunkIndex][half...])
            chunks[chunkIndex].removeSubrange(half...)
            chunks.insert(upper, at: chunkIndex + 1)
        }
        return true
    }

    /// Removes `name`; false when it was not there.
    @discardableResult
    mutating func remove(_ name: Name) -> Bool {
        let chunkIndex = firstChunk(withLastAtLeast: name)
        guard chunkIndex < chunks.count else { return false }
        let index = Self.lowerBound(of: name, in: chunks[chunkIndex])
        guard index < chunks[chunkIndex].count, chunks[chunkIndex][index] == name else { return false }
        chunks[chunkIndex].remove(at: index)
        count -= 1
        if chunks[chunkIndex].isEmpty {
            chunks.remove(at: chunkIndex)
        } else if chunks[chunkIndex].count < chunkCapacity / 4 {
            mergeSmallChunk(at: chunkIndex)
        }
        return true
    }

    /// True when `name` is in the list.
    func contains(_ name: Name) -> Bool {
        let chunkIndex = firstChunk(withLastAtLeast: name)
        guard chunkIndex < chunks.count else { return false }
        let index = Self.lowerBound(of: name, in: chunks[chunkIndex])
        return index < chunks[chunkIndex].count && chunks[chunkIndex][index] == name
    }

    /// Up to `limit` names in byte order, starting with the first name greater than
    /// `cursor` (from the start when nil), and whether more names follow them.
    func names(after cursor: Name?, limit: Int) -> (names: [Name], more: Bool) {
        var result: [Name] = []
        result.reserveCapacity(min(limit, count))
        var more = false
        forEach(after: cursor) { name in
            if result.count == limit {
                more = true
                return false
            }
            result.append(name)
            return true
        }
        return (result, more)
    }

    /// Calls `body` with each name greater than `cursor` (every name when nil) in byte
    /// order, until it returns false. The seek is O(log n); each step O(1).
    func forEach(after cursor: Name?, _ body: (Name) -> Bool) {
        let (chunkIndex, index) = cursor.map(firstPosition(after:)) ?? (0, 0)
        forEach(from: chunkIndex, index, body)
    }

    /// Calls `body` with each name greater than or equal to `floor` in byte order, until it
    /// returns false. The seek is O(log n); each step O(1).
    func forEach(notBefore floor: Name, _ body: (Name) -> Bool) {
        let chunkIndex = firstChunk(withLastAtLeast: floor)
        forEach(from: chunkIndex, chunkIndex < chunks.count ? Self.lowerBound(of: floor, in: chunks[chunkIndex]) : 0, body)
    }

    /// Calls `body` with each name from position (`chunkIndex`, `index`) on, until it returns false.
    private func forEach(from chunkIndex: Int, _ index: Int, _ body: (Name) -> Bool) {
        var chunkIndex = chunkIndex
        var index = index
        while chunkIndex < chunks.count {
            let chunk = chunks[chunkIndex]
            while index < chunk.count {
                guard body(chunk[index]) else { return }
                index += 1
            }
            chunkIndex += 1
            index = 0
        }
    }

    /// Every name in byte order (tests and small channels only).
    var all: [Name] { chunks.flatMap { $0 } }

    // MARK: - Searching

    /// Position of the first name strictly greater than `cursor`.
    private func firstPosition(after cursor: Name) -> (chunk: Int, index: Int) {
        var low = 0, high = chunks.count
        while low < high {
            let mid = (low + high) / 2
            if cursor < chunks[mid][chunks[mid].count - 1] { high = mid } else { low = mid + 1 }
        }
        guard low < chunks.count else { return (chunks.count, 0) }
        return (low, Self.upperBound(of: cursor, in: chunks[low]))
    }

    /// Index of the first chunk whose last name is ≥ `name` (`chunks.count` when none).
    private func firstChunk(withLastAtLeast name: Name) -> Int {
        var low = 0, high = chunks.count
        while low < high {
            let mid = (low + high) / 2
            if chunks[mid][chunks[mid].count - 1] < name { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private static func lowerBound(of name: Name, in chunk: [Name]) -> Int {
        var low = 0, high = chunk.count
        while low < high {
            let mid = (low + high) / 2
            if chunk[mid] < name { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private static func upperBound(of name: Name, in chunk: [Name]) -> Int {
        var low = 0, high = chunk.count
        while low < high {
            let mid = (low + high) / 2
            if name < chunk[mid] { high = mid } else { low = mid + 1 }
        }
        return low
    }

    private mutating func mergeSmallChunk(at chunkIndex: Int) {
        if chunkIndex + 1 < chunks.count, chunks[chunkIndex].count + chunks[chunkIndex + 1].count <= chunkCapacity {
            let next = chunks.remove(at: chunkIndex + 1)
            chunks[chunkIndex].append(contentsOf: next)
        } else if chunkIndex > 0, chunks[chunkIndex - 1].count + chunks[chunkIndex].count <= chunkCapacity {
            let current = chunks.remove(at: chunkIndex)
            chunks[chunkIndex - 1].append(contentsOf: current)
        }
    }
}
