import RollcallProtocol

/// Channel presence (PROTOCOL §4): membership per user across sessions, state, events,
/// announce/interval modes and listings. Owned by ``Broker``.
///
/// Data:
/// - `channels`: every live channel by `(type, name)`; a channel with no member and nothing
///   pending is deleted at once, so dead names cost nothing.
/// - per channel (``Channel``): members by user id (hash) and in byte order
///   (``SortedNameList``), the sessions that joined, `seq`, mode and — in interval mode —
///   the map of users changed since the last event.
/// - `userChannels`: the channels each user is a member of (`getUserChannels`).
/// - per session (``SessionPresence``): the channels it joined with its flags, and the
///   states it holds for channels its user is not a member of.
/// - `flushes`: the interval flush of each channel with pending changes.
///
/// Where PROTOCOL §4 is silent, this engine:
/// - answers a state value that is not a string with `INVALID_REQUEST` (a wrong JSON type,
///   like any other argument), an empty key with `INVALID_ARGUMENT`;
/// - sends a fresh `snapshot` on every successful `join` with `presence: true`, repeated
///   joins included; applies a session's held (pending) state at its join, then the join's
///   own `state`;
/// - answers `leave` of a channel this session has not joined with `NOT_IN_CHANNEL`;
///   `removeState` without membership edits the held state (`{state, pending: true}`), or
///   returns an empty state when there is none;
/// - requires the *user's* membership (any session) to publish to a stream channel, and
///   counts only live (not held) sessions in `recipients`;
/// - writes no `publisher` on `snapshot` and `interval` events; an interval event's lists
///   are in byte order of user id; a client applies `join` (entry with an empty state),
///   then `leave`/`timeout`, then `stateChanged`;
/// - in interval mode shows, in a snapshot, the receiver's own user with its state as of the
///   last event when it was a member then, else with its current state (both exact under
///   the rule above); the `nextPage` of a truncated snapshot is a `getOnlineUsers` cursor,
///   and `getOnlineUsers` lists the same roster as of the last event, the reader's own user
///   shown by the same rule (``getOnlineUsers(_:)``);
/// - schedules a channel's interval flush `intervalSeconds` after its first pending change;
/// - restarts `seq` when a channel is deleted (no member left) and created again.
package final class PresenceEngine {
    let configuration: Configuration
    let clock: BrokerClock
    let outbox: Outbox

    var channels: [ChannelKey: Channel] = [:]
    var userChannels = UserChannelIndex()
    /// Channels with at least one member, in listing order (the server API's `getChannels`).
    var liveChannels = LiveChannelIndex()
    var flushes = TimerQueue<ChannelKey>()
    /// Deadlines of state keys set with `ttlSeconds`.
    var stateExpiries = StateExpiries()
    /// Names per chunk of the member lists (small only in tests).
    var memberChunkCapacity = 256

    init(configuration: Configuration, clock: BrokerClock, outbox: Outbox) {
        self.configuration = configuration
        self.clock = clock
        self.outbox = outbox
    }

    /// The session ended for good: `leave` (logout/close) or `timeout` (hold expired) in each
    /// of its channels where it was the user's last session; nothing on shutdown.
    func sessionEnded(_ session: Session, _ how: SessionEnd) {
        let joined = session.presence.joined.keys.sorted()
        for key in joined {
            guard let channel = channels[key] else { continue }
            switch how {
            case .logout, .closed: removeSession(session, from: channel, kind: .leave)
            case .timedOut: removeSession(session, from: channel, kind: .timeout)
            case .shutdown: removeSession(session, from: channel, kind: nil)
            }
        }
        session.presence = SessionPresence()
    }

    /// The held session was resumed on a new connection: sends a fresh snapshot for each
    /// presence-enabled channel (after the login reply) and returns `[{channel, channelType}]`.
    func sessionResumed(_ session: Session) -> [JSON] {
        let joined = session.presence.joined.sorted { $0.key < $1.key }
        for (key, flags) in joined where flags.presence {
            if let channel = channels[key] { sendSnapshot(of: channel, to: session) }
        }
        return joined.map { $0.key.json }
    }

    /// Earliest interval flush or state-key expiry due.
    var nextDeadline: Timestamp? {
        [flushes.nextDeadline(), stateExpiries.nextDeadline()].compactMap { $0 }.min()
    }

    /// Sends the interval events that are due.
    func fireDueTimers() {
        expireStateKeys()
        for key in flushes.popDue(now: clock.monotonic) {
            guard let channel = channels[key] else { continue }
            flush(channel)
            deleteIfDead(channel)
        }
    }

    /// Number of live channels (both types).
    public var channelCount: Int { channels.count }
}

/// Per-session presence bookkeeping, stored on ``Session``.
package struct SessionPresence {
    /// States set before joining, for channels the user is not a member of.
    package var pendingStates: [ChannelKey: PresenceState] = [:]
    /// TTLs (milliseconds) of pending state keys set with `ttlSeconds`: they start at the join.
    package var pendingTTLs: [ChannelKey: [String: Int64]] = [:]
    /// Channels this session joined, with the flags of its last join (last: its tail bytes
    /// take the fields after it in ``Session``).
    package var joined = JoinedChannels()

    /// A session's presence before its first join.
    package init() {}
}
