import DequeModule

/// `message` events addressed to a held session, kept for its resume (PROTOCOL §5, 1.1): up to
/// `limits.heldMessageBytes` of encoded events. The oldest kept ones stay; a message that
/// does not fit is dropped and counted (`messagesDropped` in the resume result).
package struct HeldMessages {
    private(set) var events = Deque<[UInt8]>()
    private(set) var bytes = 0
    /// Messages that did not fit.
    private(set) var dropped = 0

    /// Keeps `event` if it fits in `limit` bytes with what is kept already; else counts it.
    mutating func keep(_ event: [UInt8], limit: Int) {
        guard bytes + event.count <= limit else {
            dropped += 1
            return
        }
        events.append(event)
        bytes += event.count
    }

    /// Hands every kept event over, oldest first, and forgets them (the drop count too).
    mutating func takeAll() -> (events: Deque<[UInt8]>, dropped: Int) {
        defer { self = HeldMessages() }
        return (events, dropped)
    }
}

/// A session's ``HeldMessages``, allocated when the first message is kept.
package final class HeldMessageBox {
    var messages = HeldMessages()
}
