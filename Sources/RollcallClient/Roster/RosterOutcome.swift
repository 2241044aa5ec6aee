/// What the caller of ``PresenceRoster`` must do after applying an event.
public enum RosterOutcome: Sendable, Equatable {
    /// Not a presence event of this roster's channel: nothing changed.
    case ignored
    /// Applied; the roster is current.
    case applied
    /// A truncated snapshot (or a page) left members to read: call `getOnlineUsers` with
    /// this `page` and hand the result to ``PresenceRoster/merge(page:nextPage:)``.
    case fetchPage(String)
    /// The event's `seq` is not the last one plus 1: events were missed and the roster is
    /// stale until the next snapshot or a re-read (``PresenceRoster/resync(users:seq:nextPage:)``).
    /// Reported once, when the roster turns stale.
    case needsResync(expectedSeq: Int, receivedSeq: Int)
}

/// The kinds of presence event (PROTOCOL §4).
public enum PresenceKind: String, Sendable, Hashable, CaseIterable {
    case snapshot, join, leave, timeout, stateChanged, interval
}

/// One change a ``Roster`` made, for displays and logs.
public enum RosterChange: Sendable, Equatable {
    /// A snapshot replaced the roster; it now has this many members.
    case replaced(members: Int)
    /// The user became a member.
    case joined(String)
    /// The user left.
    case left(String)
    /// The user's presence timed out.
    case timedOut(String)
    /// The user's state changed.
    case stateChanged(String)
    /// An event did not fit the roster (a join of a member, a leave of a non-member, an
    /// event before the snapshot): a sign of missed or misordered events.
    case unexpected(String)
}
