import RollcallCore
import RollcallProtocol

/// Pieces of presence events that cluster scripts complete (docs/cluster.md, "Same bytes
/// everywhere"): the node encodes an event without its last four members, the script appends
/// `,"occupancy":N,"mode":"…","seq":S,"timestamp":T}` — the same layout
/// ``PresenceEvents`` writes on one node.
extension PresenceEvents {
    /// A `join`/`leave`/`timeout`/`stateChanged` event without its footer and closing brace.
    static func head(_ type: String, channel: ChannelKey, publisher: Name, state: PresenceState?, info: [UInt8]? = nil) -> [UInt8] {
        let full = change(type, channel: channel, publisher: publisher, state: state, info: info,
                          occupancy: 0, mode: .announce, seq: 0, timestamp: 0)
        return withoutFooter(full)
    }

    /// `{"event":"presence","type":"interval","channel":…,"channelType":…` (no closing brace):
    /// what an interval flush script starts its event with.
    static func intervalHead(channel: ChannelKey) -> [UInt8] {
        var bytes = Frames.event("presence", capacity: 128) { w in
            w.key("type"); w.string("interval")
            w.key("channel"); w.string(channel.name.string)
            w.key("channelType"); w.string(channel.type.rawValue)
        }
        bytes.removeLast()
        return bytes
    }

    /// A user id as a JSON string (`"alice"`), as interval lists carry it.
    static func encodedName(_ name: Name) -> [UInt8] {
        var writer = JSONWriter(capacity: name.string.utf8.count + 2)
        writer.string(name.string)
        return writer.bytes
    }

    /// `bytes` without `,"occupancy":…}` — the footer ``change`` wrote last.
    private static func withoutFooter(_ bytes: [UInt8]) -> [UInt8] {
        let marker = Array(#","occupancy":"#.utf8)
        var index = bytes.count - marker.count
        while index >= 0 {
            if bytes[index] == marker[0], bytes[index..<(index + marker.count)].elementsEqual(marker) {
                return Array(bytes[..<index])
            }
            index -= 1
        }
        return bytes
    }
}

extension PresenceState {
    /// A state as stored in Redis: the compact JSON object this type writes; nil when it is not one.
    init?(stored bytes: [UInt8]) {
        guard let object = try? JSONParser.parse(bytes).objectValue else { return nil }
        var state = PresenceState()
        for member in object.members {
            guard case .string(let value) = member.value else { return nil }
            state.set(member.key, value)
        }
        self = state
    }

    /// The state as stored in Redis and written in events: `{"k":"v",…}` in byte order of key.
    var encoded: [UInt8] {
        var writer = JSONWriter(capacity: 2 + totalBytes + count * 6)
        write(to: &writer)
        return writer.bytes
    }
}

extension RosterPage {
    /// A page whose states and infos come encoded (from Redis), in byte order of user id;
    /// `includeState: false` leaves the states out.
    init(encodedEntries: [(userId: Name, state: [UInt8], info: [UInt8]?)], includeState: Bool = true, more: Bool) {
        let capacity = 64 + encodedEntries.reduce(0) { $0 + $1.state.count + ($1.info?.count ?? 0) + 32 }
        self.init(names: encodedEntries.map(\.userId), capacity: capacity, more: more) { index, writer in
            let entry = encodedEntries[index]
            Self.write(entry.userId, encodedState: entry.state, info: entry.info, includeState: includeState, to: &writer)
        }
    }
}
