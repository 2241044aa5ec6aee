import RollcallCore

/// What the session scripts answer (``SessionScripts``), decoded once into Swift values: the
/// positions of each script's array reply are named here and nowhere else.

/// `session.claim` (a resume by token, on any node): `{outcome, session id, platform, node,
/// presence timeout ms, channel ids, their join flags, the message events its node heard
/// before the hold, how many of those were dropped, each channel's last message number, each
/// channel's kept entries, each channel's dropped count}`.
/// Anything but `ok` with a session id: nothing to resume.
struct ClaimScriptReply {
    /// `ok`, `none` (nothing to resume: read as ``ScriptOutcome/unexpected``) or `fenced`.
    let outcome: ScriptOutcome
    /// `wait`: the node that holds the session has not handed over what it heard before the
    /// hold yet; the claim changed nothing and is made again shortly.
    let mustWait: Bool
    /// The session taken over; nil when there was none to resume.
    let sessionId: String?
    let platform: Platform
    /// The node Redis had the session on before the claim (empty: none, it was handed over).
    let previousNode: String
    /// The session's presence timeout, when Redis has it.
    let presenceTimeoutMs: Int64?
    /// The channels it is in, with the flags it joined them with.
    var channels: [(ChannelKey, JoinFlags)]
    /// Per channel, the number of its last message when the claim ran (`mq`): the session got
    /// every one up to it on its old node or among ``kept``, so it gets only later ones.
    var messageNumbers: [ChannelKey: Int]
    /// `message` events kept for it in Redis while it was held: what its node heard before
    /// the hold, and what each channel kept (with more than one key group each channel's
    /// refence answers its share: ``refenced(_:)``).
    var kept = KeptMessages()

    init(_ reply: StoreReply) {
        outcome = ScriptOutcome(reply)
        mustWait = reply[0].text == "wait"
        sessionId = outcome == .ok ? reply[1].text : nil
        platform = Platform(rawValue: reply[2].text ?? "") ?? .other
        previousNode = reply[3].text ?? ""
        presenceTimeoutMs = reply[4].integer
        channels = zip(reply[5].elements ?? [], reply[6].elements ?? []).compactMap { id, flags -> (ChannelKey, JoinFlags)? in
            guard let key = id.text.flatMap(ClusterKeys.channel(fromId:)) else { return nil }
            let text = flags.text ?? "--"
            return (key, JoinFlags(presence: text.contains("p"), messages: text.contains("m")))
        }
        var numbers: [ChannelKey: Int] = [:]
        for (id, number) in zip(reply[5].elements ?? [], reply[9].elements ?? []) {
            guard let key = id.text.flatMap(ClusterKeys.channel(fromId:)), let number = number.integer else { continue }
            numbers[key] = Int(number)
        }
        messageNumbers = numbers
        kept.heard = (reply[7].elements ?? []).compactMap(\.bytes)
        kept.heardDropped = Int(reply[8].integer ?? 0)
        for ((key, _), (entries, dropped)) in zip(channels, zip(reply[10].elements ?? [], reply[11].elements ?? [])) {
            kept.channels[key] = KeptMessages.ChannelShare(entries: (entries.elements ?? []).compactMap(\.bytes),
                                                           dropped: Int(dropped.integer ?? 0))
        }
    }

    /// The channels' join flags, message numbers and kept messages as their
    /// `presence.refence` answered (`replies`, one per channel of ``channels``, in order; with
    /// more than one key group the claim reads none). A channel the session left (`notin`)
    /// is no channel of it: its leave ran in the channel's slot, and the step that takes it
    /// off the session's channels in the user's slot had not landed when the claim read them
    /// (it follows the leave's answer, and is sent again until Redis answers; chaos seed
    /// 207061897078743 resumed a session into a channel its client had left).
    mutating func refenced(_ replies: [StoreReply]) {
        var still: [(ChannelKey, JoinFlags)] = []
        for ((key, _), reply) in zip(channels, replies) where reply.outcome == "ok" {
            let text = reply[1].text ?? "--"
            still.append((key, JoinFlags(presence: text.contains("p"), messages: text.contains("m"))))
            messageNumbers[key] = Int(reply[2].integer ?? 0)
            kept.channels[key] = KeptMessages.ChannelShare(entries: (reply[3].elements ?? []).compactMap(\.bytes),
                                                           dropped: Int(reply[4].integer ?? 0))
        }
        channels = still
    }
}

/// `session.declareDead`: `{nodes declared dead now, nodes being reaped, ends due (1/0), scans (1/0)}`.
struct DeclareDeadScriptReply {
    /// A node whose sessions the key groups still have to orphan, and when it was declared
    /// dead (Redis ms, `P{0}deaths`).
    struct Reaping: Equatable {
        let node: String
        let declaredDeadAt: Int64
    }

    /// Every node whose sessions the key groups still have to orphan (`P{0}reaping`).
    let reaping: [Reaping]
    /// Out of a grace window: ends left unfinished are handed out.
    let endsDue: Bool
    /// This node reads the key groups' buckets this tick (it holds the scanner's lease, or there is none).
    let scans: Bool
    /// The cluster's unexpired subscriptions as the scanner last counted them (`meta` `subs`).
    let subscriptions: Int

    init(_ reply: StoreReply) {
        let deaths = (reply[5].elements ?? []).map { $0.integer ?? 0 }
        reaping = (reply[1].elements ?? []).enumerated().compactMap { index, node in
            node.text.map { Reaping(node: $0, declaredDeadAt: index < deaths.count ? deaths[index] : 0) }
        }
        endsDue = reply[2].integer == 1
        scans = reply[3].integer == 1
        subscriptions = Int(reply[4].integer ?? 0)
    }
}

/// `session.reapGroup`: `{held sessions whose hold ended with no node, ends another node began
/// and did not finish}`, each an ``End``.
struct ReapScriptReply {
    /// One session end handed to this node: `{id, user, kind (t/l), how (logout/closed), channel ids}`.
    struct End {
        let sessionId: String
        let user: Name
        /// `timeout` or `leave`.
        let kind: RemovalKind
        /// It ended by `logout` (the user goes `loggedOut` if it was the last).
        let loggedOut: Bool
        /// The channels not left yet.
        let channels: [ChannelKey]

        init?(_ reply: StoreReply) {
            guard let sessionId = reply[0].text, let user = reply[1].text.map(Name.init(unchecked:)) else { return nil }
            self.sessionId = sessionId
            self.user = user
            kind = reply[2].text == "t" ? .timeout : .leave
            loggedOut = reply[3].text == "logout"
            channels = ClusterKeys.channels(fromIds: reply[4])
        }
    }

    /// Held sessions with no node whose hold ended: they time out.
    let timedOut: [End]
    /// Ends their node began and did not finish (it died in between).
    let leftUnfinished: [End]
    /// With more than one key group: the sessions of the nodes declared dead, now held with no
    /// node, and their channels, to refence, each with the dead node (``orphanedSessions(_:)``;
    /// logged in Redis until ``SessionScripts/refenced`` confirms them).
    let orphaned: [Orphan]

    init(_ reply: StoreReply) {
        timedOut = (reply[0].elements ?? []).compactMap(End.init)
        leftUnfinished = (reply[1].elements ?? []).compactMap(End.init)
        orphaned = Self.orphanedSessions(reply[2])
    }

    /// A session an orphaning made held with no node, whose channels are to be refenced.
    struct Orphan {
        let sessionId: String
        let channels: [ChannelKey]
        /// The node it was taken from (`''` when the answer does not say: a hand-over's, of the
        /// node itself).
        let node: String
    }

    /// `orphan`'s list (`{entry <g>/<id>, channel ids[, node]}` per session).
    static func orphanedSessions(_ reply: StoreReply) -> [Orphan] {
        (reply.elements ?? []).compactMap { entry in
            guard let text = entry[0].text, let slash = text.firstIndex(of: "/") else { return nil }
            return Orphan(sessionId: String(text[text.index(after: slash)...]), channels: ClusterKeys.channels(fromIds: entry[1]),
                          node: entry[2].text ?? "")
        }
    }
}

/// `session.start`: `{'ok', over}`, the user's sessions over `maxSessionsPerUser` as id and
/// node pairs, or `{'fenced'}`.
struct StartScriptReply {
    let outcome: ScriptOutcome
    /// The sessions to end, oldest first, with the node that has each (`''`: none).
    let overTheLimit: [(sessionId: String, node: String)]

    init(_ reply: StoreReply) {
        outcome = ScriptOutcome(reply)
        let flat = reply[1].elements ?? []
        overTheLimit = stride(from: 0, to: flat.count - 1, by: 2).map { (flat[$0].text ?? "", flat[$0 + 1].text ?? "") }
    }
}
