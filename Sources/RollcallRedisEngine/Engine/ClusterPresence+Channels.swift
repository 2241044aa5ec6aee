import RollcallCore
import RollcallProtocol

/// The server API's view over every channel of the cluster (PROTOCOL §10).
extension ClusterPresence {
    /// `getChannels` over the cluster's list of channels: every key group's bucket
    /// (`P{<g>}channels`) paged by `ZRANGEBYLEX` after the same cursor, the pages merged (a
    /// k-way merge: message before stream, byte order, cut at the page size), so a cursor is
    /// the last entry whatever group it is in, and any node continues it.
    func getChannelsInCluster(_ request: GetChannelsRequest, then answer: @escaping (Result<JSON, BrokerError>) -> Void) {
        let namePrefix = request.prefix?.string ?? ""
        callEveryGroup({ [keys] in
            ServerAPIScripts.channels(channelList: keys.channelList(group: $0), after: request.after, namePrefix: namePrefix,
                                      pageSize: request.pageSize)
        }) { result in
            switch result {
            case .failure(let failure):
                answer(.failure(failure.brokerError))
            case .success(let replies):
                let page = ServerAPIScripts.ChannelPage.merged(replies.map(ServerAPIScripts.ChannelPage.init), limit: request.pageSize)
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
