import RollcallCore

/// The presence scripts (``PresenceScripts``) as Swift calls: each function names a script's
/// arguments and lays them out in the order its Lua reads them — the channel's eight
/// (``Channel``), then the script's own, then any state-key deadlines
/// (``ClusterPresence/TTLOperation``). Their replies are decoded in `PresenceScriptReplies.swift`.
extension PresenceScripts {
    /// Arguments 1–8 of every channel script, read by the library as `ch`.
    struct Channel {
        /// The channel's hash key, its id and its pub/sub channel.
        let base: String, id: String, events: String
        /// The key of the cluster's due-flush set.
        let dueFlushes: String
        /// `presence.maxInstantEvents`, `presence.hysteresis` and `intervalSeconds` in ms.
        let maxInstantEvents: Int, hysteresis: Int, intervalMs: Int64
        /// The head of the channel's `interval` events (empty: not needed by this call).
        let intervalHead: [UInt8]

        var arguments: [[UInt8]] {
            [storeArgument(base), storeArgument(id), storeArgument(events), storeArgument(dueFlushes),
             storeArgument(String(maxInstantEvents)), storeArgument(String(hysteresis)), storeArgument(String(intervalMs)), intervalHead]
        }
    }

    /// The per-user index keys a membership change keeps up to date.
    struct MembershipIndexes {
        /// The user's channels, the cluster's channel list with this channel's entry, and the
        /// session's channels.
        let userChannels: String, allChannels: String, channelEntry: String, sessionChannels: String

        var arguments: [[UInt8]] { [userChannels, allChannels, channelEntry, sessionChannels].map(storeArgument) }
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

    /// `presence.join`: `session` of `user` joins with `flags` (`p`/`-`, `m`/`-`) and
    /// `newState`, if the member's state is still `expected` (nil: not a member); the events'
    /// heads for a join and a state change, the user's encoded name, how many members the
    /// snapshot may list (0: none), the indexes, the login's `info`, and the fencing check
    /// (`sessionRecord` must be owned by `node`).
    static func join(_ channel: Channel, user: Name, session: String, flags: String, expected: [UInt8]?, newState: [UInt8],
                     joinHead: [UInt8], changedHead: [UInt8], encodedName: [UInt8], snapshotLimit: Int,
                     indexes: MembershipIndexes, info: [UInt8]?, sessionRecord: String, node: String,
                     ttl: [ClusterPresence.TTLOperation]) -> StoreCommand {
        .script(join, arguments: channel.arguments + [
            storeArgument(user.string), storeArgument(session), storeArgument(flags), expected.map { [UInt8(ascii: "=")] + $0 } ?? [],
            newState, joinHead, changedHead, encodedName, storeArgument(String(snapshotLimit)),
        ] + indexes.arguments + [info ?? [], storeArgument(sessionRecord), storeArgument(node)] + ClusterPresence.ttlOperations(ttl))
    }

    /// `presence.leave`: `session` of `user` leaves, shown as `kind` with the event `head`;
    /// `owner` (the session's record and the node that must own it) for a client's own
    /// leave, nil for an end whose record is gone.
    static func leave(_ channel: Channel, user: Name, session: String, kind: LeaveKind, head: [UInt8], encodedName: [UInt8],
                      indexes: MembershipIndexes, owner: (sessionRecord: String, node: String)?) -> StoreCommand {
        .script(leave, arguments: channel.arguments + [
            storeArgument(user.string), storeArgument(session), storeArgument(kind.rawValue), head, encodedName,
        ] + indexes.arguments + [storeArgument(owner?.sessionRecord ?? ""), storeArgument(owner?.node ?? "")])
    }

    /// `presence.setState`: `user`'s state becomes `newState` if it is still `expected`.
    static func setState(_ channel: Channel, user: Name, expected: [UInt8], newState: [UInt8], head: [UInt8], encodedName: [UInt8],
                         ttl: [ClusterPresence.TTLOperation]) -> StoreCommand {
        .script(setState, arguments: channel.arguments + [storeArgument(user.string), expected, newState, head, encodedName]
            + ClusterPresence.ttlOperations(ttl))
    }

    /// `presence.publish`: the message `event` from `session`, for every message session
    /// (held ones keep it, up to `heldMessageBytes`); `requiredMember`: a stream channel's
    /// publisher must be a member.
    static func publish(_ channel: Channel, session: String, requiredMember: Name?, event: [UInt8], prefix: String,
                        heldMessageBytes: Int) -> StoreCommand {
        .script(publish, arguments: channel.arguments + [
            storeArgument(session), storeArgument(requiredMember?.string ?? ""), storeArgument(requiredMember != nil ? "1" : "0"),
            event, storeArgument(prefix), storeArgument(String(heldMessageBytes)),
        ])
    }

    /// `presence.onlineUsers`: a page of `pageSize` members after `after`, as `viewer` sees it.
    static func onlineUsers(_ channel: Channel, after: Name?, pageSize: Int, includeState: Bool, includeUserId: Bool,
                            viewer: Name?) -> StoreCommand {
        .script(onlineUsers, arguments: channel.arguments + [
            storeArgument(after?.string ?? ""), storeArgument(String(pageSize)), storeArgument(includeState ? "1" : "0"),
            storeArgument(includeUserId ? "1" : "0"), storeArgument(viewer?.string ?? ""),
        ])
    }

    /// `presence.readExpiries`: `user`'s state and its keys' deadlines, with Redis' time.
    static func readExpiries(_ channel: Channel, user: Name) -> StoreCommand {
        .script(readExpiries, arguments: channel.arguments + [storeArgument(user.string)])
    }

    /// `presence.snapshot`: one roster of up to `limit` members for `viewers` (the first one's
    /// entry spliced in when it joined since the last event, the others' entries apart).
    static func snapshot(_ channel: Channel, limit: Int, viewers: [Name]) -> StoreCommand {
        .script(snapshot, arguments: channel.arguments + [storeArgument(String(limit))] + viewers.map { storeArgument($0.string) })
    }

    /// `presence.flush`: the channel's due `interval` event, once, whoever runs it.
    static func flush(_ channel: Channel) -> StoreCommand {
        .script(flush, arguments: channel.arguments)
    }

    /// `presence.overdueExpiries`: up to `limit` members of `set` whose keys are a second overdue.
    static func overdueExpiries(set: String, limit: Int) -> StoreCommand {
        .script(overdueExpiries, arguments: [set, String(limit)].map(storeArgument))
    }

    /// `presence.overdue`: up to `limit` channels of `set` whose flush is `slackMs` overdue.
    static func overdueFlushes(set: String, slackMs: Int64, limit: Int) -> StoreCommand {
        .script(overdueFlushes, arguments: [set, String(slackMs), String(limit)].map(storeArgument))
    }
}
