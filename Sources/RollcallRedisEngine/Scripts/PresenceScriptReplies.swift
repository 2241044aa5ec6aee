import RollcallCore

/// What the presence scripts answer (``PresenceScripts``), decoded once into Swift values: the
/// positions of each script's array reply are named here and nowhere else.

/// The first element of a changing script's reply: what happened.
enum ScriptOutcome: Equatable {
    /// The change was made.
    case ok
    /// The stored state is not the one the change was based on: try again from the one the
    /// reply carries (second element).
    case retry
    /// The user (or session) is not a member of the channel.
    case notMember
    /// This node was declared dead and has not learned it yet: it changes nothing in Redis.
    case fenced
    /// The session has no fence copy in the channel and its record is in another slot: the
    /// node checks it there (`presence.userSide`), then sends the script again.
    case first
    /// Anything else (an error reply, a shape no script answers): a bug or a foreign Redis.
    case unexpected

    init(_ reply: StoreReply) {
        switch reply.outcome {
        case "ok": self = .ok
        case "retry": self = .retry
        case "notmember": self = .notMember
        case "fenced": self = .fenced
        case "first": self = .first
        default: self = .unexpected
        }
    }
}

/// `presence.join`: `{outcome, occupancy, mode, seq, due-and-now, roster, earliest expiry,
/// message number, roster version, held (0 built, 1 held, 2 followed)}` (the last two when the
/// joiner asked for presence).
struct JoinScriptReply {
    let outcome: ScriptOutcome
    /// Occupancy after the join.
    let occupancy: Int
    /// The channel's mode after the join (`announce` when absent).
    let mode: String
    /// The `seq` the joiner's snapshot shows.
    let seq: Int
    /// The interval flush now due, and Redis' time (``ClusterPresence/scheduleFlush(_:dueAndNow:)``).
    let dueAndNow: StoreReply
    /// The snapshot's roster, for a joiner that asked for presence; only the joiner's own
    /// entry when ``rosterHeld``.
    let roster: StoreReply
    /// The channel's roster version (with ``seq``, what the roster is keyed on); nil when no
    /// roster was asked for.
    let rosterVersion: Int?
    /// The roster the node sent (``PresenceScripts/HeldRoster``) is the one as of ``seq``:
    /// the script built none.
    let rosterHeld: Bool
    /// The join followed a roster read in flight (``PresenceScripts/HeldRoster/follows``) and
    /// the roster it sent did not hold: the script built none.
    let rosterFollowed: Bool
    /// The member's earliest state-key expiry.
    let earliestExpiry: StoreReply
    /// The number of the channel's last message when the join ran (`mq`): the joiner gets
    /// only later ones.
    let messageNumber: Int

    init(_ reply: StoreReply) {
        outcome = ScriptOutcome(reply)
        occupancy = Int(reply[1].integer ?? 0)
        mode = reply[2].text ?? "announce"
        seq = Int(reply[3].integer ?? 0)
        dueAndNow = reply[4]
        roster = reply[5]
        earliestExpiry = reply[6]
        messageNumber = Int(reply[7].integer ?? 0)
        rosterVersion = reply[8].integer.map { Int($0) }
        rosterHeld = reply[9].integer == 1
        rosterFollowed = reply[9].integer == 2
    }
}

/// `presence.setState` (a client's, or the expiry of keys): `{outcome, due-and-now, earliest
/// expiry}`.
struct StateScriptReply {
    let outcome: ScriptOutcome
    let dueAndNow: StoreReply
    let earliestExpiry: StoreReply

    init(_ reply: StoreReply) {
        outcome = ScriptOutcome(reply)
        dueAndNow = reply[1]
        earliestExpiry = reply[2]
    }
}

/// `presence.leave` (a leave or timeout of one session) and `presence.flush` (an interval
/// event): `{outcome, due-and-now}`.
struct FlushingScriptReply {
    let dueAndNow: StoreReply

    init(_ reply: StoreReply) {
        dueAndNow = reply[1]
    }
}

/// `presence.publish`: `{outcome, recipients}`.
struct PublishScriptReply {
    let outcome: ScriptOutcome
    /// Live message sessions of the cluster it went to, the publishing one aside.
    let recipients: Int

    init(_ reply: StoreReply) {
        outcome = ScriptOutcome(reply)
        recipients = Int(reply[1].integer ?? 0)
    }
}

/// `presence.onlineUsers`: `{total occupancy, seq, users, states, more, infos, reader's own
/// state, reader's own info}`.
struct OnlineUsersScriptReply {
    /// The roster's occupancy as of its last event.
    let totalOccupancy: Int
    /// The channel's `seq` when the page was read.
    let seq: Int
    /// The page: user ids, encoded states and infos (empty: none), in the same order.
    let entries: [(userId: Name, state: [UInt8], info: [UInt8]?)]
    /// More users follow the page.
    let more: Bool
    /// The reader's current state when it joined since the last event (empty otherwise).
    let ownState: [UInt8]?
    /// The reader's info with it.
    let ownInfo: [UInt8]?

    init(_ reply: StoreReply) {
        totalOccupancy = Int(reply[0].integer ?? 0)
        seq = Int(reply[1].integer ?? 0)
        let users = reply[2].elements ?? []
        let states = reply[3].elements ?? []
        let infos = reply[5].elements ?? []
        entries = users.enumerated().map { index, user in
            let state = states.count > index ? states[index].bytes ?? Array("{}".utf8) : Array("{}".utf8)
            let info = infos.count > index ? infos[index].bytes.flatMap { $0.isEmpty ? nil : $0 } : nil
            return (Name(unchecked: user.text ?? ""), state, info)
        }
        more = reply[4].integer == 1
        ownState = reply[6].bytes.flatMap { $0.isEmpty ? nil : $0 }
        ownInfo = reply[7].bytes.flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// `presence.snapshot` (a fresh snapshot for a resumed or resynced session): `{occupancy, mode,
/// seq, roster, others, roster version, held}`.
struct SnapshotScriptReply {
    let mode: String?
    let seq: Int
    /// The roster as the first viewer sees it (`rosterAtLastEvent`); only that viewer's own
    /// entry when ``rosterHeld``.
    let roster: StoreReply
    /// Each further viewer's own entry, as state and info (empty: none to add).
    let others: [StoreReply]
    /// The channel's roster version (with ``seq``, what the roster is keyed on).
    let rosterVersion: Int
    /// The roster the node sent is the one as of ``seq``: the script built none.
    let rosterHeld: Bool

    init(_ reply: StoreReply) {
        mode = reply[1].text
        seq = Int(reply[2].integer ?? 0)
        roster = reply[3]
        others = reply[4].elements ?? []
        rosterVersion = Int(reply[5].integer ?? 0)
        rosterHeld = reply[6].integer == 1
    }

    /// The roster as viewer `index` (in the order the script was given) sees it.
    func roster(forViewerAt index: Int) -> StoreReply {
        guard index > 0 else { return roster }
        let state = 2 * (index - 1)
        guard state + 1 < others.count else { return roster }
        return .array([roster[0], roster[1], others[state], others[state + 1]])
    }
}
