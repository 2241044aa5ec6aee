import RollcallProtocol

/// A `message` event (PROTOCOL §4): what another session published to a channel this session
/// joined with `messages: true`.
public struct MessageEvent: Codable, Sendable, Equatable {
    /// The channel's name.
    public var channel: String
    /// The channel's type.
    public var channelType: ChannelType
    /// The publishing user (or the server API's `publisher` name).
    public var publisher: String
    /// The message, any JSON.
    public var message: JSON
    /// Milliseconds since the Unix epoch, from the broker's clock.
    public var timestamp: Int?

    /// The event's channel as a reference.
    public var channelRef: ChannelRef { ChannelRef(channel, type: channelType) }

    /// A message event.
    public init(channel: String, channelType: ChannelType = .message, publisher: String, message: JSON, timestamp: Int? = nil) {
        self.channel = channel; self.channelType = channelType; self.publisher = publisher; self.message = message
        self.timestamp = timestamp
    }

    enum CodingKeys: String, CodingKey { case channel, channelType, publisher, message, timestamp }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        channel = try c.decode(String.self, forKey: .channel)
        channelType = try c.decode(ChannelType.self, forKey: .channelType, default: .message)
        publisher = try c.decode(String.self, forKey: .publisher)
        message = try c.decode(JSON.self, forKey: .message, default: .null)
        timestamp = try c.decodeIfPresent(Int.self, forKey: .timestamp)
    }
}
