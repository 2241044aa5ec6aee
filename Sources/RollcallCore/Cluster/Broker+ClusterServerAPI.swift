import RollcallProtocol

/// The server API (PROTOCOL §10) in cluster mode: any node answers for the whole cluster.
/// The ops over every channel or every node go to Redis and answer when it replies
/// (``Action/respond(_:status:body:)`` may come in a later `handle` call); the others go
/// through the engines (``ChannelPresence``, ``UserStatuses``).
extension Broker {
    /// `getChannels` over the cluster's list of channels (`P channels`), paged by `ZRANGEBYLEX`.
    func getChannelsInCluster(_ request: GetChannelsRequest, then answer: @escaping (Result<JSON, BrokerError>) -> Void) {
        let after = request.after.map { ($0.type == .message ? "m" : "s") + $0.name.string } ?? ""
        let arguments = [clusterKeys.prefix, after, request.prefix?.string ?? "", String(request.pageSize)]
        call([.script(ServerAPIScripts.channels, arguments: arguments.map(storeArgument))]) { result in
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

    /// `disconnectUser`: every session of the user, on every node, ends as by `logout`; live
    /// ones close with 4403 and the reason (by their own node, told on its control channel).
    func disconnectUserInCluster(_ request: DisconnectUserRequest, then answer: @escaping (Result<JSON, BrokerError>) -> Void) {
        let arguments = [clusterKeys.prefix, request.userId.string]
        call([.script(ServerAPIScripts.sessionsOfUser, arguments: arguments.map(storeArgument))]) { [self] result in
            switch result {
            case .failure(let failure):
                answer(.failure(failure.brokerError))
            case .success(let replies):
                let flat = replies.first?.elements ?? []
                var count = 0
                var index = 0
                while index + 1 < flat.count {
                    let sessionId = flat[index].text ?? "", node = flat[index + 1].text ?? ""
                    index += 2
                    count += 1
                    if node == nodeId, let session = directory.session(id: sessionId) {
                        let connection = session.connection
                        end(session, .logout)
                        if let connection { close(connection, .disconnectedByServer, reason: request.reason) }
                    } else if !node.isEmpty {
                        tell(node: node, .end(sessionId: sessionId, code: .disconnectedByServer, reason: request.reason))
                    } else {
                        endRemotely(sessionId, loggedOut: true)
                    }
                }
                answer(.success(.object(["sessions": .int(count)])))
            }
        }
    }

    /// `getInfo`: the live nodes with their sessions, and the cluster's totals.
    func infoInCluster(then answer: @escaping (Result<JSON, BrokerError>) -> Void) {
        let arguments = [clusterKeys.prefix, String(configuration.cluster.nodeTimeoutSeconds.milliseconds)]
        call([.script(ServerAPIScripts.info, arguments: arguments.map(storeArgument))]) { result in
            switch result {
            case .failure(let failure):
                answer(.failure(failure.brokerError))
            case .success(let replies):
                let reply = replies.first ?? .null
                let flat = reply[0].elements ?? []
                var nodes: [(id: String, sessions: Int)] = []
                var index = 0
                while index + 1 < flat.count {
                    nodes.append((flat[index].text ?? "?", Int(flat[index + 1].integer ?? 0)))
                    index += 2
                }
                nodes.sort { $0.id < $1.id }
                answer(.success(.object([
                    "version": .string(BrokerVersion.current),
                    "nodes": .array(nodes.map { .object(["nodeId": .string($0.id), "sessions": .int($0.sessions)]) }),
                    "channels": .int(Int(reply[1].integer ?? 0)),
                    "sessions": .int(Int(reply[2].integer ?? 0)),
                ])))
            }
        }
    }
}
