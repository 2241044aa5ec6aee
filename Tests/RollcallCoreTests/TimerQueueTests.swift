import Testing
@testable import RollcallCore

/// The deadline queue every timer of the core and the Redis engine uses: earliest first,
/// re-arming replaces, cancelling disarms, stale entries never fire.
@Suite("TimerQueue")
struct TimerQueueTests {
    @Test func dueKeysComeOutEarliestFirstAndOnlyOnce() {
        var queue = TimerQueue<String>()
        queue.schedule("c", at: 30)
        queue.schedule("a", at: 10)
        queue.schedule("b", at: 20)
        #expect(queue.nextDeadline() == 10)
        #expect(queue.popDue(now: 20) == ["a", "b"])
        #expect(queue.popDue(now: 20) == [])
        #expect(queue.nextDeadline() == 30)
        #expect(queue.count == 1)
    }

    @Test func reArmingAKeyReplacesItsDeadline() {
        var queue = TimerQueue<String>()
        queue.schedule("a", at: 10)
        queue.schedule("a", at: 50)
        #expect(queue.nextDeadline() == 50)
        #expect(queue.popDue(now: 40) == [])
        #expect(queue.popDue(now: 50) == ["a"])
        #expect(queue.count == 0)
    }

    @Test func aCancelledKeyNeverFires() {
        var queue = TimerQueue<Int>()
        queue.schedule(1, at: 10)
        queue.schedule(2, at: 20)
        queue.cancel(1)
        #expect(!queue.isScheduled(1))
        #expect(queue.isScheduled(2))
        #expect(queue.nextDeadline() == 20)
        #expect(queue.popDue(now: 100) == [2])
        #expect(queue.nextDeadline() == nil)
    }

    @Test func manyReArmsOfFewKeysStayCorrectThroughCompaction() {
        var queue = TimerQueue<Int>()
        for round in 0..<2000 {
            for key in 0..<4 { queue.schedule(key, at: Timestamp(10_000 + round * 4 + key)) }
        }
        #expect(queue.count == 4)
        #expect(queue.popDue(now: 100_000) == [0, 1, 2, 3])
    }
}
