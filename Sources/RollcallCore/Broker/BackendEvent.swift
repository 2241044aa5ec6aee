import RollcallProtocol

/// One event for the application's backend (webhooks, PROTOCOL §11), encoded once as a
/// compact JSON object without its `id` (the transport adds it when it batches the event).
///
/// The core emits one only when webhooks are on and ``Kind`` is listed in
/// `webhooks.events`; with webhooks off it costs one flag test per event.
public struct BackendEvent: Sendable, Equatable {
    /// The kinds a backend can ask for in `webhooks.events`.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A presence event exactly as clients receive it (`join`, `leave`, `timeout`,
        /// `stateChanged`, `interval`; never `snapshot`).
        case presence
        /// `{"event":"channel","type":"occupied"|"vacated","channel","channelType","timestamp","seq"}`.
        case channel
        /// `{"event":"userStatus","version","status":record}`.
        case userStatus
    }

    /// What kind of event it is.
    public let kind: Kind
    /// The event as one compact JSON object starting with `{"event":`. For `presence` these
    /// are the very bytes the channel's sessions were sent.
    public let bytes: [UInt8]

    /// An event of `kind` encoded as `bytes`.
    public init(kind: Kind, bytes: [UInt8]) {
        self.kind = kind
        self.bytes = bytes
    }
}

/// Encoders of the backend-only events (the `presence` kind reuses the client encoding).
package enum BackendEvents {
    /// `{"event":"channel","type":"occupied"|"vacated","channel","channelType","timestamp","seq"}`,
    /// where `seq` is the channel's presence `seq` of the event that occupied or vacated it
    /// (PROTOCOL §11, 1.2). The Redis engine's scripts write the same bytes
    /// (``channelFields(_:)`` is their middle part).
    package static func channel(_ type: String, channel: ChannelKey, timestamp: Timestamp, seq: Int) -> [UInt8] {
        var bytes = Array(#"{"event":"channel","type":"#.utf8)
        bytes += quoted(type)
        bytes.append(UInt8(ascii: ","))
        bytes += channelFields(channel)
        bytes += Array(#","timestamp":\#(timestamp),"seq":\#(seq)}"#.utf8)
        return bytes
    }

    /// `"channel":<name>,"channelType":<type>`: the channel's part of a `channel` event.
    package static func channelFields(_ channel: ChannelKey) -> [UInt8] {
        var bytes = Array(#""channel":"#.utf8)
        bytes += quoted(channel.name.string)
        bytes += Array(#","channelType":"#.utf8)
        bytes += quoted(channel.type.rawValue)
        return bytes
    }

    /// `{"event":"userStatus","version":n,"status":record}`: `version` steps by one with every
    /// change of the user's record (PROTOCOL §11, 1.2).
    package static func userStatus(_ record: UserStatusRecord, version: Int64) -> [UInt8] {
        Frames.event("userStatus", capacity: 256) { w in
            w.key("version"); w.int(Int(version))
            w.key("status")
            record.write(to: &w)
        }
    }

    private static func quoted(_ text: String) -> [UInt8] {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.string(text)
        return writer.bytes
    }
}
