import RollcallCore

/// A channel as one node sees it in cluster mode: the sessions of this node that joined it,
/// and how far this node delivered its presence events (docs/cluster.md, "Delivery on each node").
///
/// Events come from Redis pub/sub in `seq` order. An event with `seq = delivered + 1` goes to
/// every presence-enabled local session whose snapshot is older than it (never to the
/// subject user's own sessions); an older one is dropped; a gap starts a re-read of the
/// channel (``ClusterPresence/resync(_:)``). A session waiting for its snapshot (a join, a
/// resume) gets no event until the snapshot arrives; then the events after the snapshot's
/// `seq` that this node already delivered are replayed to it from ``recent``.
final class LocalChannel {
    /// One local session in the channel.
    struct Member {
        let session: Session
        var flags: JoinFlags
        /// The `seq` of the last snapshot it was sent; nil while one is on its way.
        var baseline: Int?
        /// Messages numbered up to this one (`mq`) are not for it: published before it joined,
        /// or before it was resumed here, when it got them elsewhere or with its resume.
        var messagesBefore = 0
        /// The user's state in Redis as this session last saw it (nil: not a member, or not
        /// known): the `expected` of its next join or `setState`, so that no read precedes the
        /// script. A wrong guess costs one more attempt, which the script's answer feeds.
        var storedState: [UInt8]?
    }

    /// One presence event as it came from Redis.
    struct Event {
        let seq: Int
        let subject: Name?
        let bytes: [UInt8]
    }

    /// Local sessions by session number.
    var members: [UInt64: Member] = [:]
    /// The `seq` of the last event this node delivered; nil before the first snapshot.
    var delivered: Int?
    /// The bytes of the event numbered ``delivered``, when an event (not a snapshot) set it:
    /// the same number with other bytes means Redis went back in time and used it again.
    var lastEventBytes: [UInt8]?
    /// Redis confirmed this node's subscription of the channel's events: every event
    /// published from then on arrives here (``ClusterPresence/whenHeard(_:_:)``).
    var isHeard = false
    /// Steps (a first join's script, a snapshot read) waiting for ``isHeard``.
    var untilHeard: [() -> Void] = []
    /// A delivered message event: its number and publishing session.
    private struct Delivered: Hashable {
        let number: Int
        let publisher: String
    }

    /// The last ``recentMessagesKept`` message events delivered here, in a ring (oldest at
    /// `nextRecentMessage` once full), and as a set (``isRepeat(number:publisher:)``).
    private var recentRing: [Delivered] = []
    private var recentSet: Set<Delivered> = []
    private var nextRecentMessage = 0
    /// How many delivered message events a channel remembers to drop their repeats.
    static let recentMessagesKept = 64

    /// Whether a message event numbered `number` (`mq`, > 0) from `publisher` was delivered
    /// here already; else it is remembered. A publish runs twice when its first run is on a
    /// master that stopped past its failover (its buffered script runs when it wakes, before
    /// it learns it is no master) and the client's retry runs on the new one: both are
    /// numbered from the same `mq` (chaos seed 205301057074642 on a Redis Cluster).
    func isRepeat(number: Int, publisher: String) -> Bool {
        let message = Delivered(number: number, publisher: publisher)
        guard recentSet.insert(message).inserted else { return true }
        if recentRing.count < Self.recentMessagesKept {
            recentRing.append(message)
        } else {
            recentSet.remove(recentRing[nextRecentMessage])
            recentRing[nextRecentMessage] = message
            nextRecentMessage = (nextRecentMessage + 1) % Self.recentMessagesKept
        }
        return false
    }
    /// Sessions waiting for a snapshot.
    var waiting = 0
    /// Per session whose first join's answer is on its way: the messages that came meanwhile,
    /// kept until the answer says which were published after the join. Apart from
    /// ``members``, so that keeping one does not copy the members being walked.
    var messagesAwaitingJoin: [UInt64: [(number: Int, bytes: [UInt8])]] = [:]
    /// Events delivered (or held back) while sessions wait, for replay to them.
    var recent: [Event] = []
    /// The roster as of the channel's last event that Redis last built for this node,
    /// encoded once: a snapshot at the same `seq` and roster version copies it, with the
    /// viewer's own entry spliced in (docs/cluster.md, "One roster per node per seq").
    /// Dropped with the channel, and after a lost link to Redis.
    var roster: Roster?
    /// Joins and snapshot reads of this node in flight that may bring a new ``roster``: a
    /// join sent meanwhile in interval mode follows them (``PresenceScripts/HeldRoster/follows``).
    var rosterReads = 0
    /// The channel was in interval mode at the last answer: its roster moves once per
    /// interval, so joins sent together wait for one read of it.
    var intervalMode = false

    /// A roster as of one of the channel's events.
    struct Roster {
        /// The `seq` and roster version it was built at.
        let seq: Int, version: Int
        /// Its first `presence.snapshotMaxMembers` entries, encoded in byte order of user id.
        let page: RosterPage
        /// How many members it has.
        let total: Int

        /// What the snapshot scripts are told the node holds.
        var held: PresenceScripts.HeldRoster { PresenceScripts.HeldRoster(seq: seq, version: version) }
    }

    /// Most events kept for replay; a session whose snapshot is older gets a fresh one.
    static let recentLimit = 256

    /// Keeps `event` for replay while some session waits.
    func remember(_ event: Event) {
        guard waiting > 0 else { return }
        keep(event)
    }

    /// Keeps `event` until a snapshot says where delivery starts (at most ``recentLimit``).
    func keep(_ event: Event) {
        if recent.count >= Self.recentLimit { recent.removeFirst(recent.count - Self.recentLimit + 1) }
        recent.append(event)
    }
}
