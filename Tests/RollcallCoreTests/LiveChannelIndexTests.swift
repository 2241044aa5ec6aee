@testable import RollcallCore
import Testing

/// ``LiveChannelIndex`` (the server API's `getChannels`) against a plain sorted model.
@Suite struct LiveChannelIndexTests {
    private func key(_ type: ChannelType, _ name: String) -> ChannelKey {
        ChannelKey(type: type, name: Name(unchecked: name))
    }

    /// Every page of a scan, joined: what the index lists for `prefix` in pages of `pageSize`.
    private func scan(_ index: LiveChannelIndex, prefix: String?, pageSize: Int) -> [ChannelKey] {
        var all: [ChannelKey] = []
        var cursor: ChannelKey?
        for _ in 0..<1000 {
            let page = index.keys(after: cursor, prefix: prefix.map { Name(unchecked: $0) }, limit: pageSize)
            #expect(page.keys.count <= pageSize)
            all += page.keys
            guard page.more else { return all }
            #expect(page.keys.count == pageSize, "a page that says more is full")
            cursor = page.keys.last
        }
        Issue.record("the scan did not end")
        return all
    }

    @Test func pagesMatchASortedModelForEveryPrefixAndPageSize() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = ["a", "b", "ab", "é", "e\u{301}", ":", "z"]
        var index = LiveChannelIndex(chunkCapacity: 3)
        var model = Set<ChannelKey>()
        for _ in 0..<400 {
            let length = Int.random(in: 1...3, using: &generator)
            let name = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }.joined()
            let channel = key(Bool.random(using: &generator) ? .message : .stream, name)
            if Int.random(in: 0..<4, using: &generator) == 0, model.contains(channel) {
                index.remove(channel)
                model.remove(channel)
            } else if !model.contains(channel) {
                index.add(channel)
                model.insert(channel)
            }
        }
        #expect(index.count == model.count)
        let sorted = model.sorted()
        for prefix in [nil, "a", "ab", "é", "e", "b:", "zz", "abababab"] {
            let expected = sorted.filter { prefix == nil || $0.name.string.utf8.starts(with: prefix!.utf8) }
            for pageSize in [1, 2, 5, 1000] {
                #expect(scan(index, prefix: prefix, pageSize: pageSize) == expected, "prefix \(prefix ?? "nil"), pages of \(pageSize)")
            }
        }
    }

    @Test func aCursorBeforeThePrefixStartsAtThePrefixAndMessageComesBeforeStream() {
        var index = LiveChannelIndex(chunkCapacity: 2)
        for name in ["a", "b1", "b2", "c"] { index.add(key(.message, name)) }
        for name in ["a", "b3"] { index.add(key(.stream, name)) }
        let fromBefore = index.keys(after: key(.message, "a"), prefix: Name(unchecked: "b"), limit: 10)
        #expect(fromBefore.keys == [key(.message, "b1"), key(.message, "b2"), key(.stream, "b3")])
        let fromStream = index.keys(after: key(.stream, "a"), prefix: nil, limit: 10)
        #expect(fromStream.keys == [key(.stream, "b3")])
        let exactEnd = index.keys(after: nil, prefix: Name(unchecked: "b"), limit: 3)
        #expect(exactEnd.keys.count == 3 && !exactEnd.more)
        #expect(ChannelPageCursor.decode(ChannelPageCursor.encode(after: key(.stream, "é:1"))) == key(.stream, "é:1"))
        #expect(ChannelPageCursor.decode(PageCursor.encode(after: Name(unchecked: "a"))) == nil, "a user cursor is not a channel cursor")
    }
}
