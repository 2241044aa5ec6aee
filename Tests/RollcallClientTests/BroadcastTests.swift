@testable import RollcallClient
import Testing

/// `Broadcast` and its readers: multicast, bounded, and what a slow reader gets.
@Suite struct BroadcastTests {
    @Test("every reader gets every element yielded after it subscribed, in order")
    func multicast() async {
        let broadcast = Broadcast<Int>()
        let first = broadcast.subscribe(.endReader(limit: 10))
        broadcast.yield(1)
        let second = broadcast.subscribe(.endReader(limit: 10))
        broadcast.yield(2)
        broadcast.yield(3)
        broadcast.finish()
        #expect(await drain(first) == ([1, 2, 3], nil))
        #expect(await drain(second) == ([2, 3], nil))
        let late = broadcast.subscribe(.endReader(limit: 10))
        #expect(await drain(late) == ([], nil), "a reader after the end ends at once")
    }

    @Test("endReader: a reader more than `limit` behind gets what it holds, then slowReader; the others go on")
    func slowReaderIsEnded() async {
        let broadcast = Broadcast<Int>()
        let slow = broadcast.subscribe(.endReader(limit: 2))
        let fast = broadcast.subscribe(.endReader(limit: 100))
        for n in 1...5 { broadcast.yield(n) }
        broadcast.finish()
        #expect(await drain(slow) == ([1, 2], .slowReader(limit: 2)))
        #expect(await drain(fast) == ([1, 2, 3, 4, 5], nil))
    }

    @Test("keepNewest: a slow reader keeps the newest, and the first one kept says how many were skipped")
    func keepNewestMarksSkips() async {
        let broadcast = Broadcast<[Int]> { element, skipped in element.append(-skipped) }
        let reader = broadcast.subscribe(.keepNewest(limit: 2))
        for n in 1...5 { broadcast.yield([n]) }
        broadcast.finish()
        var got: [[Int]] = []
        while case .success(let element?) = await reader.next() { got.append(element) }
        #expect(got == [[4, -3], [5]])
    }

    @Test("a reader waiting (or not yet) gets the next element; a released reader is forgotten")
    func waitingAndReleased() async {
        let broadcast = Broadcast<Int>()
        let reader = broadcast.subscribe(.endReader(limit: 4))
        let next = Task { await reader.next() }
        broadcast.yield(7)
        #expect(try! await next.value.get() == 7)
        do { _ = broadcast.subscribe(.endReader(limit: 4)) }
        #expect(broadcast.readerCount == 1, "only the reader still held")
    }

    private func drain(_ reader: ReaderBuffer<Int>) async -> ([Int], RollcallError?) {
        var got: [Int] = []
        while true {
            switch await reader.next() {
            case .success(let element?): got.append(element)
            case .success(nil): return (got, nil)
            case .failure(let error): return (got, error)
            }
        }
    }
}
