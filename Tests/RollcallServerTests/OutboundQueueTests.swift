@testable import RollcallServer
import Testing

@Suite("OutboundQueue")
struct OutboundQueueTests {
    private func object(_ byte: UInt8, count: Int) -> [UInt8] { Array(repeating: byte, count: count) }

    @Test func keepsOrderAndByteCountThroughEveryShape() {
        var queue = OutboundQueue()
        #expect(queue.isEmpty && queue.count == 0 && queue.first == nil)
        queue.append(object(1, count: 3))  // one, inline
        #expect(queue.count == 1 && queue.byteCount == 3 && queue.first == object(1, count: 3))
        queue.append(object(2, count: 5))  // two: a deque
        queue.append(object(3, count: 7))
        #expect(queue.count == 3 && queue.byteCount == 15)
        #expect(queue.removeFirst() == object(1, count: 3))
        #expect(queue.count == 2 && queue.byteCount == 12)
        queue.append(object(4, count: 1))
        #expect(queue.removeFirst() == object(2, count: 5))
        #expect(queue.removeFirst() == object(3, count: 7))  // back to one
        #expect(queue.count == 1 && queue.first == object(4, count: 1))
        #expect(queue.removeFirst() == object(4, count: 1))
        #expect(queue.isEmpty && queue.byteCount == 0)
    }

    @Test func interleavedAppendsAndRemovalsMatchAnArray() {
        var queue = OutboundQueue()
        var model: [[UInt8]] = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<2000 {
            if model.isEmpty || Bool.random(using: &generator) {
                let next = object(UInt8(step % 251), count: Int.random(in: 0...9, using: &generator))
                queue.append(next)
                model.append(next)
            } else {
                #expect(queue.removeFirst() == model.removeFirst())
            }
            #expect(queue.count == model.count)
            #expect(queue.byteCount == model.reduce(0) { $0 + $1.count })
            #expect(queue.first == model.first)
        }
    }

    @Test func removeAllEmptiesIt() {
        var queue = OutboundQueue()
        queue.append(object(1, count: 2))
        queue.append(object(2, count: 2))
        queue.removeAll()
        #expect(queue.isEmpty && queue.byteCount == 0)
    }

    /// An append reuses the deque's storage until it must grow: the queue is never copied
    /// per append. Growth is geometric, so 4096 appends move the storage a dozen times. (The
    /// enum-payload queue this replaced copied on every append only in optimized builds
    /// where `append` was not inlined, which this debug-built test cannot see; the release
    /// guard is `rollcall-bench slow-consumers`, BENCHMARKS.md Issue 16 §1d.)
    @Test func appendsNeverCopyTheStorage() {
        var queue = OutboundQueue()
        var moves = 0
        var lastAddress: UnsafeRawPointer?
        for step in 0..<4096 {
            queue.append(object(UInt8(step % 251), count: 1))
            let address = queue.restStorageAddress
            if address != lastAddress { moves += 1 }
            lastAddress = address
        }
        #expect(queue.count == 4096)
        #expect(moves <= 20)
    }

    /// Three words: the first object, the deque behind it and the byte count.
    @Test func staysThreeWords() {
        #expect(MemoryLayout<OutboundQueue>.size == 24)
    }
}
