import RollcallProtocol

/// One member of a listing: user id, state and token `info` (encoded; nil when none).
package typealias RosterEntry = (userId: Name, state: PresenceState, info: [UInt8]?)

/// Encoders for the presence and message events (PROTOCOL §4). Each event is encoded once
/// and the same bytes go to every recipient.
package enum PresenceEvents {
    /// `join`, `leave`, `timeout` or `stateChanged` about `publisher`; `state` is written for
    /// `join` and `stateChanged` only, `info` (the member's token info, 1.1) for `join` only.
    package static func change(
        _ type: String, channel: ChannelKey, publisher: Name, state: PresenceState?, info: [UInt8]? = nil,
        occupancy: Int, mode: PresenceMode, seq: Int, timestamp: Timestamp
    ) -> [UInt8] {
        Frames.event("presence", capacity: 192 + (state?.totalBytes ?? 0) + (info?.count ?? 0)) { w in
            w.key("type"); w.string(type)
            header(&w, channel)
            w.key("publisher"); w.string(publisher.string)
            if let state { w.key("state"); state.write(to: &w) }
            if let info { w.key("info"); w.raw(info) }
            footer(&w, occupancy: occupancy, mode: mode, seq: seq, timestamp: timestamp)
        }
    }

    /// The net change of one interval.
    package struct IntervalChange {
        var joins: [Name] = []
        var leaves: [Name] = []
        var timeouts: [Name] = []
        var stateChanges: [(userId: Name, state: PresenceState)] = []
        /// The token `info` of users in `joins` that have one (1.1).
        var joinInfo: [(userId: Name, info: [UInt8])] = []

        var isEmpty: Bool { joins.isEmpty && leaves.isEmpty && timeouts.isEmpty && stateChanges.isEmpty }
    }

    /// `interval` with `interval: {join, leave, timeout, stateChanged}`.
    static func interval(
        channel: ChannelKey, change: IntervalChange, occupancy: Int, seq: Int, timestamp: Timestamp
    ) -> [UInt8] {
        Frames.event("presence", capacity: 256) { w in
            w.key("type"); w.string("interval")
            header(&w, channel)
            w.key("interval")
            w.beginObject()
            w.key("join"); names(&w, change.joins)
            w.key("leave"); names(&w, change.leaves)
            w.key("timeout"); names(&w, change.timeouts)
            w.key("stateChanged")
            entries(&w, change.stateChanges)
            if !change.joinInfo.isEmpty {
                w.key("joinInfo")
                w.beginObject()
                for entry in change.joinInfo { w.key(entry.userId.string); w.raw(entry.info) }
                w.endObject()
            }
            w.endObject()
            footer(&w, occupancy: occupancy, mode: .interval, seq: seq, timestamp: timestamp)
        }
    }

    /// `snapshot` with `snapshot: [{userId, state, info?}]`, and `truncated`/`nextPage` when cut.
    static func snapshot(
        channel: ChannelKey, members: [RosterEntry], nextPage: String?,
        occupancy: Int, mode: PresenceMode, seq: Int, timestamp: Timestamp
    ) -> [UInt8] {
        snapshot(channel: channel, capacity: 192 + members.count * 32, nextPage: nextPage, occupancy: occupancy,
                 mode: mode, seq: seq, timestamp: timestamp) { w in
            w.beginArray()
            for member in members { entry(&w, member.userId, member.state, info: member.info) }
            w.endArray()
        }
    }

    /// `snapshot` whose member array (`[{userId, state}, …]`) is already encoded.
    package static func snapshot(
        channel: ChannelKey, encodedMembers: [UInt8], nextPage: String?,
        occupancy: Int, mode: PresenceMode, seq: Int, timestamp: Timestamp
    ) -> [UInt8] {
        snapshot(channel: channel, capacity: 192 + encodedMembers.count, nextPage: nextPage, occupancy: occupancy,
                 mode: mode, seq: seq, timestamp: timestamp) { w in w.raw(encodedMembers) }
    }

    /// The snapshot event around a member array that `writeMembers` writes.
    private static func snapshot(
        channel: ChannelKey, capacity: Int, nextPage: String?, occupancy: Int, mode: PresenceMode,
        seq: Int, timestamp: Timestamp, writeMembers: (inout JSONWriter) -> Void
    ) -> [UInt8] {
        Frames.event("presence", capacity: capacity) { w in
            w.key("type"); w.string("snapshot")
            header(&w, channel)
            w.key("snapshot"); writeMembers(&w)
            if let nextPage {
                w.key("truncated"); w.bool(true)
                w.key("nextPage"); w.string(nextPage)
            }
            footer(&w, occupancy: occupancy, mode: mode, seq: seq, timestamp: timestamp)
        }
    }

    /// `{"event":"message","channel","channelType","publisher","message","timestamp"}`;
    /// `message` is already compact-encoded.
    package static func message(channel: ChannelKey, publisher: Name, encodedMessage: [UInt8], timestamp: Timestamp) -> [UInt8] {
        Frames.event("message", capacity: 128 + encodedMessage.count) { w in
            header(&w, channel)
            w.key("publisher"); w.string(publisher.string)
            w.key("message"); w.raw(encodedMessage)
            w.key("timestamp"); w.int(Int(timestamp))
        }
    }

    private static func header(_ w: inout JSONWriter, _ channel: ChannelKey) {
        w.key("channel"); w.string(channel.name.string)
        w.key("channelType"); w.string(channel.type.rawValue)
    }

    private static func footer(_ w: inout JSONWriter, occupancy: Int, mode: PresenceMode, seq: Int, timestamp: Timestamp) {
        w.key("occupancy"); w.int(occupancy)
        w.key("mode"); w.string(mode.rawValue)
        w.key("seq"); w.int(seq)
        w.key("timestamp"); w.int(Int(timestamp))
    }

    private static func names(_ w: inout JSONWriter, _ names: [Name]) {
        w.beginArray()
        for name in names { w.string(name.string) }
        w.endArray()
    }

    private static func entries(_ w: inout JSONWriter, _ entries: [(userId: Name, state: PresenceState)]) {
        w.beginArray()
        for entry in entries { self.entry(&w, entry.userId, entry.state) }
        w.endArray()
    }

    /// One `{userId, state, info?}` member entry, as snapshots and `stateChanged` lists
    /// carry it (`info` in snapshots only, 1.1).
    static func entry(_ w: inout JSONWriter, _ userId: Name, _ state: PresenceState, info: [UInt8]? = nil) {
        w.beginObject()
        w.key("userId"); w.string(userId.string)
        w.key("state"); state.write(to: &w)
        if let info { w.key("info"); w.raw(info) }
        w.endObject()
    }
}
