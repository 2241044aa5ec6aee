@testable import RollcallCore
import Testing

@Suite struct SortedNameListTests {
    private func name(_ s: String) -> Name { Name(unchecked: s) }

    @Test func keepsNamesInByteOrderWithoutDuplicates() {
        var list = SortedNameList(chunkCapacity: 4)
        for s in ["m", "b", "z", "é", "e\u{301}", "a", "B", "m"] { list.insert(name(s)) }
        #expect(list.count == 7)
        #expect(list.all.map(\.string) == ["B", "a", "b", "e\u{301}", "m", "z", "é"])
        let insertedAgain = list.insert(name("a"))
        #expect(insertedAgain == false)
        #expect(list.contains(name("é")))
        #expect(!list.contains(name("c")))
    }

    @Test func seeksTheFirstNameAfterACursor() {
        var list = SortedNameList(chunkCapacity: 4)
        for i in stride(from: 0, to: 100, by: 2) { list.insert(name(String(paddedNumber(i)))) }
        let page = list.names(after: name("041"), limit: 3)
        #expect(page.names.map(\.string) == ["042", "044", "046"])
        #expect(page.more)
        let exact = list.names(after: name("042"), limit: 2)
        #expect(exact.names.map(\.string) == ["044", "046"])
        let tail = list.names(after: name("095"), limit: 10)
        #expect(tail.names.map(\.string) == ["096", "098"])
        #expect(!tail.more)
        #expect(list.names(after: name("099"), limit: 5).names.isEmpty)
        #expect(list.names(after: nil, limit: 1).names.map(\.string) == ["000"])
    }

    @Test func matchesASortedSetUnderRandomInsertsAndRemovals() {
        var generator = SplitMix64(seed: 7)
        var list = SortedNameList(chunkCapacity: 8)
        var reference = Set<String>()
        for _ in 0..<5000 {
            let value = paddedNumber(Int.random(in: 0..<400, using: &generator))
            if Bool.random(using: &generator) {
                let inserted = list.insert(name(value))
                let expected = reference.insert(value).inserted
                #expect(inserted == expected)
            } else {
                let removed = list.remove(name(value))
                let expected = reference.remove(value) != nil
                #expect(removed == expected)
            }
        }
        #expect(list.count == reference.count)
        #expect(list.all.map(\.string) == reference.sorted())
        #expect(list.chunks.allSatisfy { !$0.isEmpty && $0.count <= 8 })
        // Paging walks everything exactly once.
        var seen: [String] = []
        var cursor: Name?
        while true {
            let page = list.names(after: cursor, limit: 7)
            seen += page.names.map(\.string)
            guard page.more, let last = page.names.last else { break }
            cursor = last
        }
        #expect(seen == reference.sorted())
    }

    @Test func removingEverythingLeavesItEmpty() {
        var list = SortedNameList(chunkCapacity: 4)
        for i in 0..<50 { list.insert(name(paddedNumber(i))) }
        for i in (0..<50).reversed() {
            let removed = list.remove(name(paddedNumber(i)))
            #expect(removed)
        }
        #expect(list.isEmpty)
        #expect(list.chunks.isEmpty)
        let removedAgain = list.remove(name("000"))
        #expect(!removedAgain)
    }
}

func paddedNumber(_ i: Int) -> String {
    let s = String(i)
    return String(repeating: "0", count: max(0, 3 - s.count)) + s
}

/// SplitMix64: a small deterministic generator for seeded tests.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
