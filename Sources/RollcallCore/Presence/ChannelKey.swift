import RollcallProtocol

/// The two channel namespaces (PROTOCOL §4): the same name in each is a different channel.
package enum ChannelType: String, Sendable, Hashable, Comparable {
    case message, stream

    package static func < (a: ChannelType, b: ChannelType) -> Bool { a.rawValue < b.rawValue }
}

/// Identifies a channel: `(channelType, channel)`.
package struct ChannelKey: Hashable, Sendable, Comparable {
    // The name first: 17 bytes instead of 24 (a session keeps its first channel's key inline).
    package let name: Name
    package let type: ChannelType

    package init(type: ChannelType, name: Name) {
        self.name = name
        self.type = type
    }

    package static func < (a: ChannelKey, b: ChannelKey) -> Bool {
        a.type != b.type ? a.type < b.type : a.name < b.name
    }

    /// `{channel, channelType}` as listed by `getUserChannels` and a resume's `channels`.
    package var json: JSON {
        .object(["channel": .string(name.string), "channelType": .string(type.rawValue)])
    }
}

extension Request {
    /// The `channel` and optional `channelType` (default `message`) arguments.
    func channelKey() throws(BrokerError) -> ChannelKey {
        let name = try self.name("channel")
        let typeName = try optionalString("channelType") ?? ChannelType.message.rawValue
        guard let type = ChannelType(rawValue: typeName) else {
            throw BrokerError(.invalidArgument, "channelType must be \"message\" or \"stream\"")
        }
        return ChannelKey(type: type, name: name)
    }
}
