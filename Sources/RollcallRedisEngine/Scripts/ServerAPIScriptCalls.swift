import RollcallCore

/// The server API's scripts (``ServerAPIScripts``) as Swift calls: arguments passed by the
/// names the scripts' parameter lists give them, and replies decoded once into Swift values. Nowhere else on
/// the Swift side is one of these scripts' arguments or replies read by position.
extension ServerAPIScripts {
    /// `api.channels` in one key group's bucket `channelList` (`P{<g>}channels`): a page of up to
    /// `pageSize` channels whose name starts with `namePrefix`, after the entry `after`
    /// (`m<name>` / `s<name>`, or nil for the first page).
    static func channels(channelList: String, after: ChannelKey?, namePrefix: String, pageSize: Int) -> StoreCommand {
        let entry = after.map { ($0.type == .message ? "m" : "s") + $0.name.string } ?? ""
        return channels.command(["channels": channelList, "after": entry, "namePrefix": namePrefix, "limit": pageSize])
    }

    /// `api.info`: every node in `P{0}nodes`, and whether it beat within `liveNodeTimeoutMs`.
    static func info(prefix: String, liveNodeTimeoutMs: Int64) -> StoreCommand {
        info.command(["nodes": ClusterKeys.controlTag(prefix: prefix) + "nodes", "timeout": liveNodeTimeoutMs])
    }

    /// `api.groupSessions`: the sessions of `nodes` in key group `group`, and its held ones no node has.
    static func groupSessions(keys: ClusterKeys, group: Int, nodes: [String]) -> StoreCommand {
        groupSessions.command(["held": keys.heldSessions(group: group)], rest: nodes.map { Array($0.utf8) })
    }

    /// `api.sessionsOfUser`: the sessions of `user` (listed in `sessions`,
    /// ``ClusterKeys/UserKeys/sessions``), each with its node.
    static func sessionsOfUser(sessions: String, user: Name) -> StoreCommand {
        sessionsOfUser.command(["sessions": sessions, "user": user.string])
    }

    // MARK: - Replies

    /// `api.channels`' answer in one group: `{flat (entry, occupancy, mode, seq)…, more}`.
    struct ChannelPage {
        /// One channel of the page.
        struct Entry {
            let key: ChannelKey
            let occupancy: Int
            let mode: String
            let seq: Int
            /// `m<name>` / `s<name>`: where it sorts in the cluster's list (message before
            /// stream, byte order).
            let entry: [UInt8]
        }

        let entries: [Entry]
        /// Whether more channels follow the last entry.
        let hasMore: Bool

        init(_ reply: StoreReply) {
            let flat = reply[0].elements ?? []
            entries = stride(from: 0, to: flat.count - 3, by: 4).map { index in
                let entry = flat[index].bytes ?? Array("m".utf8)
                let key = ChannelKey(type: entry.first == UInt8(ascii: "s") ? .stream : .message,
                                     name: Name(unchecked: String(decoding: entry.dropFirst(), as: UTF8.self)))
                return Entry(key: key, occupancy: Int(flat[index + 1].integer ?? 0), mode: flat[index + 2].text ?? "announce",
                             seq: Int(flat[index + 3].integer ?? 0), entry: entry)
            }
            hasMore = reply[1].integer == 1
        }

        init(entries: [Entry], hasMore: Bool) {
            self.entries = entries
            self.hasMore = hasMore
        }

        /// The cluster's page of `limit` from every group's page (each of at most `limit`
        /// after the same cursor): their entries merged in the list's order and cut at
        /// `limit`; more follow when an entry was cut or a group had more.
        static func merged(_ pages: [ChannelPage], limit: Int) -> ChannelPage {
            var all = pages.flatMap(\.entries)
            all.sort { $0.entry.lexicographicallyPrecedes($1.entry) }
            let more = all.count > limit || pages.contains { $0.hasMore }
            return ChannelPage(entries: Array(all.prefix(max(0, limit))), hasMore: more)
        }
    }

    /// `api.info`'s answer (`{flat (node, sessions)…, sessions}`) with the channel counts of
    /// every group (`ZCARD P{<g>}channels`).
    struct ClusterInfo {
        /// The live nodes with their session counts, by node id.
        let nodes: [(id: String, sessions: Int)]
        let channels: Int
        /// Every session: the nodes' (live or not declared dead yet) and those held with no node.
        let sessions: Int

        /// From `api.info`'s reply (`nodes`), every group's `api.groupSessions` reply for those
        /// nodes (`groupSessions`, with the group's channel count).
        init(_ nodes: StoreReply, groupSessions: [StoreReply]) {
            let flat = nodes.elements ?? []
            let all = stride(from: 0, to: flat.count - 1, by: 2).map { (id: flat[$0].text ?? "?", live: flat[$0 + 1].integer == 1) }
            var counts = [Int](repeating: 0, count: all.count), orphans = 0
            for reply in groupSessions {
                for (index, count) in (reply[0].elements ?? []).prefix(all.count).enumerated() { counts[index] += Int(count.integer ?? 0) }
                orphans += Int(reply[1].integer ?? 0)
            }
            self.nodes = zip(all, counts).filter { $0.0.live }.map { (id: $0.0.id, sessions: $0.1) }.sorted { $0.id < $1.id }
            channels = groupSessions.reduce(0) { $0 + Int($1[2].integer ?? 0) }
            sessions = counts.reduce(orphans, +)
        }
    }

    /// `api.sessionsOfUser`' answer (`session, node` pairs; node '' while held by no node).
    static func userSessions(_ reply: StoreReply) -> [(id: String, node: String)] {
        let flat = reply.elements ?? []
        return stride(from: 0, to: flat.count - 1, by: 2).map { (id: flat[$0].text ?? "", node: flat[$0 + 1].text ?? "") }
    }
}
