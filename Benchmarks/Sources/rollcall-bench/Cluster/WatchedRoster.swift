import Foundation
import RollcallClient

/// A watcher's roster of one channel, fed with parsed events on a client service thread and
/// read by the driver; notes when the last `timeout` arrived.
final class WatchedRoster: @unchecked Sendable {
    private let lock = NSLock()
    private var roster: Roster
    private var firstTimeout: Double?
    private var lastTimeout: Double?
    private var timeouts = 0

    init(channel: String) { roster = Roster(channel: channel) }

    /// Applies one event (call from the connection's `onEvent`).
    func apply(_ event: Event) {
        let now = MonotonicSeconds.now
        lock.lock(); defer { lock.unlock() }
        roster.apply(event) { change in
            if case .timedOut = change {
                if firstTimeout == nil { firstTimeout = now }
                lastTimeout = now
                timeouts += 1
            }
        }
    }

    /// The member user ids now.
    var userIds: Set<String> { lock.lock(); defer { lock.unlock() }; return Set(roster.sortedMembers.map(\.userId)) }

    var count: Int { lock.lock(); defer { lock.unlock() }; return roster.count }

    /// Monotonic time of the first `timeout` applied (nil: none yet).
    var firstTimeoutAt: Double? { lock.lock(); defer { lock.unlock() }; return firstTimeout }

    /// Monotonic time of the last `timeout` applied, and how many there were.
    var timeoutTally: (last: Double?, count: Int) { lock.lock(); defer { lock.unlock() }; return (lastTimeout, timeouts) }
}
