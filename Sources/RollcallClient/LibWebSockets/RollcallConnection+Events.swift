// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
import DequeModule
import Foundation
import RollcallProtocol

/// Reading what the broker pushed: events in arrival order, and replies nobody waited for.
extension RollcallConnection {
    /// Removes and returns the oldest queued event, waiting up to `timeout` for one.
    public func nextEvent(timeout: Duration) throws(ClientError) -> Event {
        try waitForEvent(timeout: timeout) { _ in true }
    }

    /// Removes and returns the oldest queued event matching `predicate`, waiting up to
    /// `timeout`; events that do not match stay queued in order. `predicate` runs with the
    /// connection's lock held: it must not call back into the connection.
    public func waitForEvent(timeout: Duration, where predicate: (Event) -> Bool) throws(ClientError) -> Event {
        let deadline = timeout.deadlineFromNow
        cond.lock()
        defer { cond.unlock() }
        while true {
            if let index = events.firstIndex(where: predicate) { return events.remove(at: index) }
            if let info = finalClose { throw .closed(info) }
            if !cond.wait(until: deadline), events.firstIndex(where: predicate) == nil {
                throw .timeout("an event")
            }
        }
    }

    /// Removes and returns every queued event.
    public func drainEvents() -> [Event] {
        cond.withLock {
            let all = Array(events)
            events.removeAll()
            return all
        }
    }

    /// Removes and returns the oldest reply nobody was waiting for (no registered id),
    /// waiting up to `timeout`.
    public func nextUnmatchedReply(timeout: Duration) throws(ClientError) -> Reply {
        let deadline = timeout.deadlineFromNow
        cond.lock()
        defer { cond.unlock() }
        while true {
            if let reply = unmatchedReplies.popFirst() { return reply }
            if let info = finalClose { throw .closed(info) }
            if !cond.wait(until: deadline), unmatchedReplies.isEmpty { throw .timeout("an unmatched reply") }
        }
    }
}
#endif
