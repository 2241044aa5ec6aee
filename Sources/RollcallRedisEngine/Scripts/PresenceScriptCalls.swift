import RollcallCore

/// The presence scripts (``PresenceScripts``) as Swift calls: each function passes a script's
/// arguments by the names its parameter list gives them — the channel's twelve (``Channel``),
/// then the script's own — and any state-key deadlines (``ClusterPresence/TTLOperation``) as
/// the rest. Their replies are decoded in `PresenceScriptReplies.swift`.
extension PresenceScripts {
    /// The arguments every channel script takes first, read by the library as `ch`: its keys
    /// (`channelBase` the first) and its group's buckets are declared (`KEYS`, one slot).
    struct Channel {
        /// The channel's hash key, its id and its pub/sub channel.
        let base: String, id: String, events: String
        /// The buckets of the channel's key group it writes (docs/cluster.md, "Key groups and
        /// buckets"): its due flushes (`P{<g>}due`), its members' state-key deadlines
        /// (`P{<g>}due:ttl`) and its webhook stream (`P{<g>}wh`, where the script writes the
        /// channel's events whatever stream `hooks` names).
        let dueFlushes: String, dueExpiries: String, webhookStream: String
        /// `presence.maxInstantEvents`, `presence.hysteresis` and `intervalSeconds` in ms.
        let maxInstantEvents: Int, hysteresis: Int, intervalMs: Int64
        /// The head of the channel's `interval` events (empty: not needed by this call).
        let intervalHead: [UInt8]
        /// Which webhook events the script writes (``ClusterKeys/webhookHooks``), and the
        /// channel's part of its `channel` events (``BackendEvents/channelFields(_:)``; empty
        /// when none is written).
        let hooks: String, channelFields: [UInt8]

        static let parameters: [LuaParameter] = [
            .key("channelBase"), .text("channelId"), .text("channelEvents"), .key("channelDue"), .key("channelDueTTL"), .key("channelStream"),
            .number("maxInstantEvents"), .number("hysteresis"), .number("intervalMs"), .text("intervalHead"),
            .text("hooks"), .text("channelFields"),
        ]

        var arguments: KeyValuePairs<String, any LuaArgument> {
            ["channelBase": base, "channelId": id, "channelEvents": events, "channelDue": dueFlushes, "channelDueTTL": dueExpiries,
             "channelStream": webhookStream,
             "maxInstantEvents": maxInstantEvents, "hysteresis": hysteresis, "intervalMs": intervalMs, "intervalHead": intervalHead,
             "hooks": hooks, "channelFields": channelFields]
        }
    }

    /// The per-user index keys a membership change keeps up to date.
    struct MembershipIndexes {
        /// The user's channels, the channel's group's bucket of the list of channels
        /// (`P{<g>}channels`, declared) with this channel's entry, and the session's channels.
        let userChannels: String, allChannels: String, channelEntry: String, sessionChannels: String

        static let parameters: [LuaParameter] = [.text("userChannels"), .key("allChannels"), .text("channelEntry"), .text("sessionChannels")]

        var arguments: KeyValuePairs<String, any LuaArgument> {
            ["userChannels": userChannels, "allChannels": allChannels, "channelEntry": channelEntry, "sessionChannels": sessionChannels]
        }
    }

    /// Who must own a session for a channel script to act for it (fencing): `node`, checked
    /// against the session's fence copy in the channel, else its record.
    struct SessionOwner {
        /// The session's id and its record's key (`''`: the record is in another slot than the
        /// channel, checked by `presence.userSide` instead).
        let session: String, sessionRecord: String
        /// The node that must own it.
        let node: String
        /// The node checked the record already (`presence.userSide` answered `ok`).
        var checked = false
    }

    /// How a session leaves (`presence.leave`'s `kind`).
    enum LeaveKind: String {
        /// A `leave` event.
        case leave = "l"
        /// A `timeout` event.
        case timeout = "t"
        /// No event (the member stays through another session, or it goes silently).
        case silent = "-"
    }

    /// Which roster as of the last event the node holds for a channel (``LocalChannel/Roster``):
    /// a snapshot script builds none while the channel's `seq` and roster version are these.
    struct HeldRoster {
        /// The `seq` and roster version it was built at; `seq` -1: none held.
        let seq: Int, version: Int
        /// A join only: when the pair no longer holds, build none either (the node has a
        /// roster read in flight, sent before, whose answer comes first and may be the one).
        var follows = false

        /// No roster held.
        static let none = HeldRoster(seq: -1, version: 0)
    }

    /// `presence.join`: `session` of `user` joins with `flags` (`p`/`-`, `m`/`-`) and
    /// `newState`, if the member's state is still `expected` (nil: not a member); the events'
    /// heads for a join and a state change, the user's encoded name, how many members the
    /// snapshot may list (0: none), the indexes (the user's empty when they are in another
    /// slot), the login's `info`, the fencing check (the session's fence copy here, else
    /// `sessionRecord` — `''` when in another slot — must be owned by `node`; `checked`: the
    /// node checked the record with `presence.userSide`), and the roster the node holds (`held`).
    static func join(_ channel: Channel, user: Name, session: String, flags: String, expected: [UInt8]?, newState: [UInt8],
                     joinHead: [UInt8], changedHead: [UInt8], encodedName: [UInt8], snapshotLimit: Int,
                     indexes: MembershipIndexes, info: [UInt8]?, sessionRecord: String, node: String, checked: Bool, held: HeldRoster,
                     ttl: [ClusterPresence.TTLOperation]) -> StoreCommand {
        join.command(channel.arguments, [
            "user": user.string, "session": session, "flags": flags, "expected": expected.map { [UInt8(ascii: "=")] + $0 } ?? [],
            "newState": newState, "headJoin": joinHead, "headChanged": changedHead, "enc": encodedName, "limit": snapshotLimit,
        ], indexes.arguments, ["info": info ?? [], "sessionRecord": sessionRecord, "node": node, "checked": checked,
                               "rosterSeq": held.seq, "rosterVersion": held.version, "rosterFollows": held.follows],
        rest: ClusterPresence.ttlOperations(ttl))
    }

    /// `presence.leave`: `session` of `user` leaves, shown as `kind` with the event `head`;
    /// `owner` (the session's record, `''` when in another slot, and the node that must own
    /// it: its fence copy here decides) for a client's own leave, nil for an end whose record
    /// is gone.
    static func leave(_ channel: Channel, user: Name, session: String, kind: LeaveKind, head: [UInt8], encodedName: [UInt8],
                      indexes: MembershipIndexes, owner: (sessionRecord: String, node: String)?) -> StoreCommand {
        leave.command(channel.arguments, [
            "user": user.string, "session": session, "kind": kind.rawValue, "head": head, "enc": encodedName,
        ], indexes.arguments, ["sessionRecord": owner?.sessionRecord ?? "", "node": owner?.node ?? ""])
    }

    /// `presence.setState`: `user`'s state becomes `newState` if it is still `expected` (an
    /// empty `expected` matches no stored state: the script then only tells `notmember` from
    /// `retry`); `owner` for a client's own change, nil for the expiry of keys: the session,
    /// its record (`''` when in another slot), the node that must own it (the session's fence
    /// copy here decides, else the record) and whether the node checked the record already
    /// (`presence.userSide`, after a `first`).
    static func setState(_ channel: Channel, user: Name, expected: [UInt8], newState: [UInt8], head: [UInt8], encodedName: [UInt8],
                         owner: SessionOwner?, ttl: [ClusterPresence.TTLOperation]) -> StoreCommand {
        setState.command(channel.arguments, [
            "user": user.string, "expected": expected, "newState": newState, "head": head, "enc": encodedName,
        ], ["session": owner?.session ?? "", "sessionRecord": owner?.sessionRecord ?? "", "node": owner?.node ?? "",
            "checked": owner?.checked ?? false], rest: ClusterPresence.ttlOperations(ttl))
    }

    /// `presence.publish`: the message `event` from `session`, for every message session
    /// (held ones keep it, up to `heldMessageBytes`); `requiredMember`: a stream channel's
    /// publisher must be a member. A `token` the session's last publish here already carried
    /// publishes nothing (a retry of a publish whose answer was lost); '' : no check.
    static func publish(_ channel: Channel, session: String, token: String, requiredMember: Name?, event: [UInt8], prefix: String,
                        heldMessageBytes: Int) -> StoreCommand {
        publish.command(channel.arguments, [
            "session": session, "token": token, "user": requiredMember?.string ?? "", "requireMember": requiredMember != nil,
            "payload": event, "prefix": prefix, "heldLimit": heldMessageBytes,
        ])
    }

    /// `presence.onlineUsers`: a page of `pageSize` members after `after`, as `viewer` sees it.
    static func onlineUsers(_ channel: Channel, after: Name?, pageSize: Int, includeState: Bool, includeUserId: Bool,
                            viewer: Name?) -> StoreCommand {
        onlineUsers.command(channel.arguments, [
            "after": after?.string ?? "", "pageSize": pageSize, "includeState": includeState,
            "includeUserId": includeUserId, "viewer": viewer?.string ?? "",
        ])
    }

    /// `presence.readExpiries`: `user`'s state and its keys' deadlines, with Redis' time.
    static func readExpiries(_ channel: Channel, user: Name) -> StoreCommand {
        readExpiries.command(channel.arguments, ["user": user.string])
    }

    /// `presence.snapshot`: one roster of up to `limit` members for `viewers` (the first one's
    /// entry spliced in when it joined since the last event, the others' entries apart), none
    /// when the roster the node holds (`held`) still holds.
    static func snapshot(_ channel: Channel, limit: Int, held: HeldRoster, viewers: [Name]) -> StoreCommand {
        snapshot.command(channel.arguments, ["limit": limit, "rosterSeq": held.seq, "rosterVersion": held.version],
                         rest: viewers.map { Array($0.string.utf8) })
    }

    /// `presence.flush`: the channel's due `interval` event, once, whoever runs it.
    static func flush(_ channel: Channel) -> StoreCommand {
        flush.command(channel.arguments)
    }

    /// `presence.overdueExpiries`: up to `limit` members of `set` (one group's `P{<g>}due:ttl`)
    /// whose keys are a second overdue.
    static func overdueExpiries(set: String, limit: Int) -> StoreCommand {
        overdueExpiries.command(["dueSet": set, "limit": limit])
    }

    /// `presence.overdue`: up to `limit` channels of `set` (one group's `P{<g>}due`) whose flush
    /// is `slackMs` overdue.
    static func overdueFlushes(set: String, slackMs: Int64, limit: Int) -> StoreCommand {
        overdueFlushes.command(["dueSet": set, "slackMs": slackMs, "limit": limit])
    }
}
