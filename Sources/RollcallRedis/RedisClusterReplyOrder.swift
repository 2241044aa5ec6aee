import DequeModule

/// Hands a cluster client's outcomes to their callers in send order per slot: an outcome
/// that arrives before an earlier command's of the same slot (that one was redirected, or
/// sent again) waits for it. Loop thread only.
final class RedisClusterReplyOrder {
    /// One command's place in its slot's line.
    final class Ticket {
        fileprivate let slot: Int
        fileprivate let completion: RedisConnection.Completion
        fileprivate var outcome: Result<RedisReply, RedisError>?

        fileprivate init(slot: Int, completion: @escaping RedisConnection.Completion) {
            self.slot = slot
            self.completion = completion
        }
    }

    private var lines: [Int: Deque<Ticket>] = [:]

    /// The number of commands sent and not yet handed back (all slots).
    var waiting: Int { lines.values.reduce(0) { $0 + $1.count } }

    /// A ticket at the end of `slot`'s line.
    func issue(slot: Int, _ completion: @escaping RedisConnection.Completion) -> Ticket {
        let ticket = Ticket(slot: slot, completion: completion)
        lines[slot, default: []].append(ticket)
        return ticket
    }

    /// Records `ticket`'s outcome and hands back every outcome at the front of its line
    /// (a completion may send again: the line is read afresh after each).
    func settle(_ ticket: Ticket, _ outcome: Result<RedisReply, RedisError>) {
        guard ticket.outcome == nil else { return }
        ticket.outcome = outcome
        let slot = ticket.slot
        while let first = lines[slot]?.first, let ready = first.outcome {
            lines[slot]!.removeFirst()
            if lines[slot]!.isEmpty { lines[slot] = nil }
            first.completion(ready)
        }
    }
}
