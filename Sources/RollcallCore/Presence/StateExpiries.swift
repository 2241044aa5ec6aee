/// Per-key TTLs of presence state (PROTOCOL §4, 1.1): which keys of which member expire when.
///
/// One ``TimerQueue`` entry per member with expiring keys, armed at the member's earliest
/// deadline, so a channel with 10,000 typing users costs work per expiry, never per tick.
/// Deadlines are monotonic milliseconds. Keys set by one call share a deadline and so expire
/// together, in one `stateChanged`.
package struct StateExpiries {
    /// A member of a channel.
    package struct Member: Hashable {
        let channel: ChannelKey
        let user: Name
    }

    private var deadlines: [Member: [String: Timestamp]] = [:]
    private var timers = TimerQueue<Member>()

    /// Sets (`deadline` non-nil) or clears the deadline of `key`.
    mutating func set(_ key: String, of member: Member, deadline: Timestamp?) {
        var keys = deadlines[member] ?? [:]
        keys[key] = deadline
        store(keys, for: member)
    }

    /// Clears the deadlines of `keys`.
    mutating func clear(_ keys: some Sequence<String>, of member: Member) {
        guard var existing = deadlines[member] else { return }
        for key in keys { existing[key] = nil }
        store(existing, for: member)
    }

    /// Forgets every deadline of a member (it left).
    mutating func forget(_ member: Member) {
        guard deadlines.removeValue(forKey: member) != nil else { return }
        timers.cancel(member)
    }

    /// The earliest deadline of any member.
    mutating func nextDeadline() -> Timestamp? { timers.nextDeadline() }

    /// Removes and returns, per member, the keys due at `now`; members with keys left are
    /// re-armed at their next deadline.
    mutating func popDue(now: Timestamp) -> [(member: Member, keys: [String])] {
        var due: [(member: Member, keys: [String])] = []
        for member in timers.popDue(now: now) {
            guard var keys = deadlines[member] else { continue }
            let expired = keys.filter { $0.value <= now }.map(\.key).sorted()
            for key in expired { keys[key] = nil }
            store(keys, for: member)
            if !expired.isEmpty { due.append((member, expired)) }
        }
        return due
    }

    /// Number of members with expiring keys.
    var memberCount: Int { deadlines.count }

    private mutating func store(_ keys: [String: Timestamp], for member: Member) {
        if let earliest = keys.values.min() {
            deadlines[member] = keys
            timers.schedule(member, at: earliest)
        } else {
            deadlines[member] = nil
            timers.cancel(member)
        }
    }
}
