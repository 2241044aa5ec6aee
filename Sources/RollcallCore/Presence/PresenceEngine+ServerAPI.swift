import RollcallProtocol

/// The presence ops only the server API has (PROTOCOL §10).
extension PresenceEngine {
    /// `publish` from the server → `{recipients}`: no membership needed, `stream` channels
    /// too; the `message` event's `publisher` is the request's (default `server`), and every
    /// session that joined with `messages: true` gets it (no publishing session to skip).
    func publishFromServer(_ request: ServerPublishRequest) throws(BrokerError) -> JSON {
        let encoded = request.publish.encodedMessage
        guard encoded.count <= configuration.limits.maxMessageBytes else {
            throw BrokerError(.messageTooLarge, "message is \(encoded.count) bytes encoded; at most \(configuration.limits.maxMessageBytes)")
        }
        let recipients = deliverMessage(encoded, to: request.publish.channel, publisher: request.publisher, skipping: nil)
        return .object(["recipients": .int(recipients)])
    }

    /// `getChannels {prefix?, page?, pageSize?}` → `{channels: [{channel, channelType,
    /// occupancy, mode, seq}], nextPage}`: channels with a member, `message` before `stream`,
    /// byte order; a page costs O(log n + pageSize).
    func getChannels(_ request: GetChannelsRequest) -> JSON {
        let page = liveChannels.keys(after: request.after, prefix: request.prefix, limit: request.pageSize)
        var writer = JSONWriter(capacity: 2 + page.keys.count * 96)
        writer.beginArray()
        for key in page.keys {
            guard let channel = channels[key] else { continue }
            writer.beginObject()
            writer.key("channel"); writer.string(key.name.string)
            writer.key("channelType"); writer.string(key.type.rawValue)
            writer.key("occupancy"); writer.int(channel.occupancy)
            writer.key("mode"); writer.string(channel.mode.rawValue)
            writer.key("seq"); writer.int(channel.seq)
            writer.endObject()
        }
        writer.endArray()
        let nextPage: JSON = page.more ? page.keys.last.map { .string(ChannelPageCursor.encode(after: $0)) } ?? nil : nil
        return .object(["channels": .encoded(writer.bytes), "nextPage": nextPage])
    }
}
