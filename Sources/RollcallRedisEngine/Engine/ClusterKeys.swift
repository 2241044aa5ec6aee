import RollcallCore

/// The names cluster mode uses in Redis, every one under `cluster.keyPrefix` (docs/cluster.md,
/// "Keys"). A name inside a key is written as `<byte count>:<name>`, so that no channel or
/// user name can make one key look like another (`a:m` is not `a` + `:m`).
struct ClusterKeys {
    /// `cluster.keyPrefix`.
    let prefix: String
    /// The scripts' `hooks` argument (``WebhookStreamScripts/writer``): `''` with webhooks off,
    /// else `<kinds> <queueMaxEvents>`, kinds being the letters `p`, `c`, `u` of the kinds
    /// `webhooks.events` selects (each script writes to its owner's group stream).
    let webhookHooks: String

    /// How owners' keys are spread over hash tags (1 group on one Redis).
    let groups: KeyGroups

    /// The names under `prefix`, owners spread over `groups`; the scripts write the webhook
    /// events `webhooks` selects.
    init(prefix: String, groups: KeyGroups = KeyGroups(count: 1), webhooks: Configuration.Webhooks = Configuration.Webhooks()) {
        self.prefix = prefix
        self.groups = groups
        webhookHooks = Self.hooks(webhooks)
    }

    /// The names `configuration.cluster` uses.
    init(configuration: Configuration) {
        self.init(prefix: configuration.cluster.keyPrefix, groups: KeyGroups(for: configuration), webhooks: configuration.webhooks)
    }

    /// `P{<group>}`: the hash tag of key group `group` (``KeyGroups``), which every key of its
    /// owners (channels, users) starts with, and under which its buckets live (`channels`,
    /// `due`, …).
    func groupTag(_ group: Int) -> String { prefix + "{\(group)}" }

    /// The `hooks` argument for `webhooks` (``webhookHooks``).
    static func hooks(_ webhooks: Configuration.Webhooks) -> String {
        guard webhooks.isEnabled else { return "" }
        let kinds = webhooks.eventKinds
        let letters = (kinds.contains(.presence) ? "p" : "") + (kinds.contains(.channel) ? "c" : "") + (kinds.contains(.userStatus) ? "u" : "")
        guard !letters.isEmpty else { return "" }
        return "\(letters) \(max(1, webhooks.queueMaxEvents))"
    }

    /// `P{<group>}wh`: group `group`'s stream of webhook events waiting for a 2xx (consumer
    /// group `d`), written by the scripts of its channels (the user-status scripts write group
    /// 0's for now); `P{<group>}wh:dropped` counts the ones `queueMaxEvents` pushed out.
    func webhookStream(group: Int) -> String { groupTag(group) + "wh" }

    /// The keys and arguments of one channel.
    struct ChannelKeys {
        /// `P{<group>}c:<t>:<n>:<name>`: the channel's hash (`seq`, `mode`, `due`, `ml`, `ih`); its
        /// members, states, counts, sessions, pending changes, token infos (1.1) and infos at
        /// the last event of pending users are this key plus `:m`, `:st`, `:n`, `:s`, `:pend`,
        /// `:info`, `:pinfo`.
        let base: String
        /// `<t>:<n>:<name>`: the channel's id in sets of channels.
        let id: String
        /// `P{<group>}`: its group's tag, the start of its group's buckets.
        let group: String
        /// `P{<group>}e:<id>`: the pub/sub channel of its events, in the channel's slot (a shard
        /// channel on Redis Cluster: ``channel(fromEvents:)`` reads it back).
        let events: String
        /// `<t><name>`: its entry in the cluster's list of channels (message before stream, byte order).
        let listEntry: String
        /// Its group's number (``KeyGroups/group(of:)``).
        let groupNumber: Int

        /// `P{<group>}channels`: its group's bucket of the list of channels.
        var channelList: String { group + "channels" }
        /// `P{<group>}due`: its group's bucket of due interval flushes.
        var dueFlushes: String { group + "due" }
        /// `P{<group>}due:ttl`: its group's bucket of members with state keys to expire.
        var dueExpiries: String { group + "due:ttl" }
        /// `P{<group>}wh`: its group's webhook stream.
        var webhookStream: String { group + "wh" }
    }

    /// The keys of `channel`.
    func channel(_ channel: ChannelKey) -> ChannelKeys {
        let id = Self.channelId(channel)
        let number = groups.group(of: "c:" + id)
        let group = groupTag(number)
        return ChannelKeys(
            base: group + "c:" + id, id: id, group: group, events: group + "e:" + id,
            listEntry: (channel.type == .message ? "m" : "s") + channel.name.string, groupNumber: number)
    }

    /// The channel whose events channel (``ChannelKeys/events``, `P{<group>}e:<id>`) is `name`;
    /// nil when `name` is not one under this prefix.
    func channel(fromEvents name: [UInt8]) -> ChannelKey? {
        let head = eventsHead
        guard name.count > head.count, name.starts(with: head) else { return nil }
        var index = head.count
        while index < name.count, name[index] >= UInt8(ascii: "0"), name[index] <= UInt8(ascii: "9") { index += 1 }
        let tail = Self.eventsTail
        guard index > head.count, name.count - index > tail.count, name[index..<(index + tail.count)].elementsEqual(tail) else { return nil }
        return Self.channel(fromId: String(decoding: name[(index + tail.count)...], as: UTF8.self))
    }

    /// `P{`: how every events channel starts.
    private var eventsHead: [UInt8] { Array((prefix + "{").utf8) }
    /// `}e:`: what follows the group's number in an events channel.
    private static let eventsTail = Array("}e:".utf8)

    /// `<t>:<n>:<name>` of a channel.
    static func channelId(_ channel: ChannelKey) -> String {
        (channel.type == .message ? "m:" : "s:") + lengthPrefixed(channel.name.string)
    }

    /// The channels of a reply that lists channel ids (`P sc:`, `P uc:`); unreadable ids are skipped.
    static func channels(fromIds reply: StoreReply?) -> [ChannelKey] {
        (reply?.elements ?? []).compactMap { $0.text.flatMap(channel(fromId:)) }
    }

    /// The channel a `<t>:<n>:<name>` id names; nil when it is not one.
    static func channel(fromId id: String) -> ChannelKey? {
        let utf8 = Array(id.utf8)
        guard utf8.count > 4, utf8[1] == UInt8(ascii: ":") else { return nil }
        let type: ChannelType
        switch utf8[0] {
        case UInt8(ascii: "m"): type = .message
        case UInt8(ascii: "s"): type = .stream
        default: return nil
        }
        guard let colon = utf8[2...].firstIndex(of: UInt8(ascii: ":")),
              let count = Int(String(decoding: utf8[2..<colon], as: UTF8.self)),
              utf8.count - colon - 1 == count else { return nil }
        return ChannelKey(type: type, name: Name(unchecked: String(decoding: utf8[(colon + 1)...], as: UTF8.self)))
    }



    /// `P{<group>}channels`: group `group`'s bucket of the channels with members (`getChannels`
    /// merges every group's); a channel's own is ``ChannelKeys/channelList``.
    func channelList(group: Int) -> String { groupTag(group) + "channels" }

    /// `P{<group>}due`: group `group`'s channels with an interval flush due, by Redis time.
    func dueFlushes(group: Int) -> String { groupTag(group) + "due" }

    /// `P{<group>}due:ttl`: group `group`'s members with state keys to expire (`<channel id>\n<user>`
    /// by the earliest deadline, Redis ms).
    func dueExpiries(group: Int) -> String { groupTag(group) + "due:ttl" }

    /// `P{0}`: the tag of the keys that belong to no channel or user — the cluster's
    /// (`meta`, `nodes`, `reaping`, `scanner`), the nodes' (`node:<id>`, `dead:<id>`) and, for now, the
    /// messages kept for held sessions (`hm*`). They
    /// share group 0's slot: with one key group every key of the cluster is in one slot, which
    /// is what a broker on Redis Cluster runs with until every script is split
    /// (docs/cluster.md, "Where the build stands").
    var controlTag: String { Self.controlTag(prefix: prefix) }

    /// ``controlTag`` for the key prefix `prefix`.
    static func controlTag(prefix: String) -> String { prefix + "{0}" }

    /// Lua: `local control = prefix .. '{0}'`, ``controlTag`` for the scripts (needs `prefix`).
    static let luaControlTag = "local control = prefix .. '{0}'\n"

    /// `P{0}meta`: the cluster's format and epoch.
    var meta: String { controlTag + "meta" }

    /// `P{0}nodes`: live nodes by their last heartbeat (Redis ms).
    var nodes: String { controlTag + "nodes" }

    /// `P{0}node:<id>`: a node's incarnation, start and configuration sections.
    func node(_ nodeId: String) -> String { controlTag + "node:" + nodeId }

    /// `P{0}reaping`: the nodes declared dead whose sessions some key group has not orphaned yet.
    var reaping: String { controlTag + "reaping" }

    /// `P{0}dead:<id>`: the mark the reaper leaves on a node it declared dead.
    func deadMark(of nodeId: String) -> String { controlTag + "dead:" + nodeId }

    /// `P{<g>}uu:<n>:<user>`: the user's inbox, a (shard) channel in the user's key group:
    /// the records of the user and of its targets, and ready events for its sessions
    /// (``ClusterUserStatus``). The node that ran a change publishes it; every node with a
    /// session of the user hears it.
    func inbox(of user: Name) -> String { self.user(user).group + "uu:" + Self.lengthPrefixed(user.string) }

    /// True when `channel` is an inbox (``inbox(of:)``): `P{<digits>}uu:`.
    func isInbox(_ channel: [UInt8]) -> Bool {
        let head = Array((prefix + "{").utf8)
        guard channel.starts(with: head) else { return false }
        var index = head.count
        while index < channel.count, channel[index] >= UInt8(ascii: "0"), channel[index] <= UInt8(ascii: "9") { index += 1 }
        return index > head.count && channel[index...].starts(with: Array("}uu:".utf8))
    }

    /// `P{n:<node>}n`: a node's control channel (``ControlMessage``), a (shard) channel in a
    /// hash tag of its own, heard by that node only.
    func controlChannel(of nodeId: String) -> String { Self.controlChannel(prefix: prefix, node: nodeId) }

    /// ``controlChannel(of:)`` for the key prefix `prefix`.
    static func controlChannel(prefix: String, node nodeId: String) -> String { prefix + "{n:" + nodeId + "}n" }

    /// The probe channels of the subscriber (`RedisSubscriber`).
    var probeChannelPrefix: String { prefix + "probe:" }

    static func lengthPrefixed(_ name: String) -> String { "\(name.utf8.count):" + name }
}
