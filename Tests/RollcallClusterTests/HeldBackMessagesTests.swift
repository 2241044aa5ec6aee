@testable import RollcallRedisEngine
import Testing

/// What a node holds back while it may have been declared dead (``HeldBackMessages``): order
/// kept, a bound past which the overflow is noted, and a discard that says how many went.
@Suite("Held-back pub/sub messages")
struct HeldBackMessagesTests {
    @Test func keepsArrivalOrderAndEmptiesOnTake() {
        var held = HeldBackMessages()
        #expect(held.isEmpty)
        held.append(channel: Array("a".utf8), payload: [1])
        held.append(channel: Array("b".utf8), payload: [2])
        let (messages, overflowed) = held.take()
        #expect(messages.map(\.channel) == [Array("a".utf8), Array("b".utf8)] && messages.map(\.payload) == [[1], [2]])
        #expect(!overflowed && held.isEmpty)
    }

    @Test func pastTheLimitLaterMessagesAreDroppedAndTheOverflowNoted() {
        var held = HeldBackMessages()
        for index in 0...HeldBackMessages.limit { held.append(channel: Array("c\(index)".utf8), payload: []) }
        let (messages, overflowed) = held.take()
        #expect(messages.count == HeldBackMessages.limit && overflowed)
        #expect(messages.last?.channel == Array("c\(HeldBackMessages.limit - 1)".utf8), "the earliest are kept")
    }

    @Test func discardSaysHowManyWentAndLeavesNothing() {
        var held = HeldBackMessages()
        held.append(channel: Array("a".utf8), payload: [1])
        held.append(channel: Array("a".utf8), payload: [2])
        #expect(held.discard() == 2)
        #expect(held.isEmpty)
    }
}
