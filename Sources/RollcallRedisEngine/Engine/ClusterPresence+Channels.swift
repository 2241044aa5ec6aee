import RollcallCore
import RollcallProtocol

/// The server API's view over every channel of the cluster (PROTOCOL §10).
extension ClusterPresence {
    /// `getChannels` over the cluster's list of channels (`P channels`), paged by `ZRANGEBYLEX`.
    func getChannelsInCluster(_ request: GetChannelsRequest, then answer: @escaping (Result<JSON, BrokerError>) -> Void) {
        let after = request.after.map { ($0.type == .message ? "m" : "s") + $0.name.string } ?? ""
        let arguments = [keys.prefix, after, request.prefix?.string ?? "", String(request.pageSize)]
        store.call([.script(ServerAPIScripts.channels, arguments: arguments.map(storeArgument))]) { result in
            switch result {
            case .failure(let failure):
                answer(.failure(failure.brokerError))
            case .success(let replies):
                let reply = replies.first ?? .null
                let flat = reply[0].elements ?? []
                var writer = JSONWriter(capacity: 2 + flat.count * 24)
                writer.beginArray()
                var last: ChannelKey?
                var index = 0
                while index + 3 < flat.count {
                    let entry = flat[index].text ?? "m"
                    let key = ChannelKey(type: entry.hasPrefix("s") ? .stream : .message, name: Name(unchecked: String(entry.dropFirst())))
                    last = key
                    writer.beginObject()
                    writer.key("channel"); writer.string(key.name.string)
                    writer.key("channelType"); writer.string(key.type.rawValue)
                    writer.key("occupancy"); writer.int(Int(flat[index + 1].integer ?? 0))
                    writer.key("mode"); writer.string(flat[index + 2].text ?? "announce")
                    writer.key("seq"); writer.int(Int(flat[index + 3].integer ?? 0))
                    writer.endObject()
                    index += 4
                }
                writer.endArray()
                let nextPage: JSON = reply[1].integer == 1 ? last.map { .string(ChannelPageCursor.encode(after: $0)) } ?? nil : nil
                answer(.success(.object(["channels": .encoded(writer.bytes), "nextPage": nextPage])))
            }
        }
    }
}
