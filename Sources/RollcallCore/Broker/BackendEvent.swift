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
        /// `{"event":"channel","type":"occupied"|"vacated","channel","channelType","timestamp"}`.
        case channel
        /// `{"event":"userStatus","status":record}`.
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
    /// `{"event":"channel","type":"occupied"|"vacated","channel","channelType","timestamp"}`.
    package static func channel(_ type: String, channel: ChannelKey, timestamp: Timestamp) -> [UInt8] {
        Frames.event("channel", capacity: 96 + channel.name.string.utf8.count) { w in
            w.key("type"); w.string(type)
            w.key("channel"); w.string(channel.name.string)
            w.key("channelType"); w.string(channel.type.rawValue)
            w.key("timestamp"); w.int(Int(timestamp))
        }
    }

    /// `{"event":"userStatus","status":record}`.
    package static func userStatus(_ record: UserStatusRecord) -> [UInt8] {
        Frames.event("userStatus", capacity: 256) { w in
            w.key("status")
            record.write(to: &w)
        }
    }
}
