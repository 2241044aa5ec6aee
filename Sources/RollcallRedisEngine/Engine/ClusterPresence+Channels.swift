import RollcallCore
import RollcallProtocol

/// The server API's view over every channel of the cluster (PROTOCOL §10).
extension ClusterPresence {
    /// `getChannels` over the cluster's list of channels (`P channels`), paged by `ZRANGEBYLEX`.
    func getChannelsInCluster(_ request: GetChannelsRequest, then answer: @escaping (Result<JSON, BrokerError>) -> Void) {
        let command = ServerAPIScripts.channels(prefix: keys.prefix, after: request.after, namePrefix: request.prefix?.string ?? "",
                                                pageSize: request.pageSize)
        store.call([command]) { result in
            switch result {
            case .failure(let failure):
                answer(.failure(failure.brokerError))
            case .success(let replies):
                let page = ServerAPIScripts.ChannelPage(replies.first ?? .null)
                var writer = JSONWriter(capacity: 2 + page.entries.count * 96)
                writer.beginArray()
                for entry in page.entries {
                    writer.beginObject()
                    writer.key("channel"); writer.string(entry.key.name.string)
                    writer.key("channelType"); writer.string(entry.key.type.rawValue)
                    writer.key("occupancy"); writer.int(entry.occupancy)
                    writer.key("mode"); writer.string(entry.mode)
                    writer.key("seq"); writer.int(entry.seq)
                    writer.endObject()
                }
                writer.endArray()
                let last = page.entries.last?.key
                let nextPage: JSON = page.hasMore ? last.map { .string(ChannelPageCursor.encode(after: $0)) } ?? nil : nil
                answer(.success(.object(["channels": .encoded(writer.bytes), "nextPage": nextPage])))
            }
        }
    }
}
