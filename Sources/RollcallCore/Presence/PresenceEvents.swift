import RollcallProtocol

/// Encoders for the presence and message events (PROTOCOL §4). Each event is encoded once
/// and the same bytes go to every recipient.
enum PresenceEvents {
    /// `join`, `leave`, `timeout` or `stateChanged` about `publisher`; `state` is written for
    /// `join` and `stateChanged` only.
    static func change(
        _ type: String, channel: ChannelKey, publisher: Name, state: PresenceState?,
        occupancy: Int, mode: PresenceMode, seq: Int, timestamp: Timestamp
    ) -> [UInt8] {
        Frames.event("presence", capacity: 192 + (state?.totalBytes ?? 0)) { w in
            w.key("type"); w.string(type)
            header(&w, channel)
            w.key("publisher"); w.string(publisher.string)
            if let state { w.key("state"); state.write(to: &w) }
            footer(&w, occupancy: occupancy, mode: mode, seq: seq, timestamp: timestamp)
        }
    }

    /// The net change of one interval.
    struct IntervalChange {
        var joins: [Name] = []
        var leaves: [Name] = []
        var timeouts: [Name] = []
        var stateChanges: [(userId: Name, state: PresenceState)] = []

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
            w.endObject()
            footer(&w, occupancy: occupancy, mode: .interval, seq: seq, timestamp: timestamp)
        }
    }

    /// `snapshot` with `snapshot: [{userId, state}]`, and `truncated`/`nextPage` when cut.
    static func snapshot(
        channel: ChannelKey, members: [(userId: Name, state: PresenceState)], nextPage: String?,
        occupancy: Int, mode: PresenceMode, seq: Int, timestamp: Timestamp
    ) -> [UInt8] {
        snapshot(channel: channel, capacity: 192 + members.count * 32, nextPage: nextPage, occupancy: occupancy,
                 mode: mode, seq: seq, timestamp: timestamp) { w in entries(&w, members) }
    }

    /// `snapshot` whose member array (`[{userId, state}, …]`) is already encoded.
    static func snapshot(
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
    static func message(channel: ChannelKey, publisher: Name, encodedMessage: [UInt8], timestamp: Timestamp) -> [UInt8] {
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

    /// One `{userId, state}` member entry, as snapshots and `stateChanged` lists carry it.
    static func entry(_ w: inout JSONWriter, _ userId: Name, _ state: PresenceState) {
        w.beginObject()
        w.key("userId"); w.string(userId.string)
        w.key("state"); state.write(to: &w)
        w.endObject()
    }
}
