import RollcallCore
import RollcallProtocol

/// `publish` in cluster mode. A message has no `seq`, so a publish answered `UNAVAILABLE`
/// (its link to Redis dropped or stalled with the script in flight) cannot be told apart from
/// one that never ran, and Redis may still run it late. Each publish of a session therefore
/// carries a token the script keeps per session in the channel (`P c:…:lp`), and the same
/// publish sent again by the session (same channel, same message) goes with its first token
/// and event: the script that finds the token publishes nothing twice. So a retried publish
/// completes the first, as docs/protocol.md (45) says of every request answered `UNAVAILABLE`.
extension ClusterPresence {
    /// A session's publish answered `UNAVAILABLE`, kept until its next publish is answered.
    struct UncertainPublish {
        let channel: ChannelKey
        let message: [UInt8]
        let token: String
        let event: [UInt8]
    }

    /// `publish`: delivered by every node to its message-enabled sessions but the publisher's.
    func publish(_ request: PublishRequest, from session: Session, grant: Grant, then done: @escaping Completion) throws(BrokerError) {
        let key = request.channel
        try grant.checkAccess(to: key)
        let encoded = request.encodedMessage
        guard encoded.count <= configuration.limits.maxMessageBytes else {
            throw BrokerError(.messageTooLarge, "message is \(encoded.count) bytes encoded; at most \(configuration.limits.maxMessageBytes)")
        }
        let attempt: UncertainPublish
        if let earlier = uncertainPublishes[session.sessionId], earlier.channel == key, earlier.message == encoded {
            attempt = earlier
        } else {
            nextPublishToken += 1
            attempt = UncertainPublish(
                channel: key, message: encoded, token: "\(nodeId).\(nextPublishToken)",
                event: PresenceEvents.message(channel: key, publisher: session.userId, encodedMessage: encoded, timestamp: clock.now))
        }
        let sessionId = session.sessionId
        publish(attempt.event, to: key, from: sessionId, token: attempt.token,
                requiringMember: key.type == .stream ? session.userId : nil) { [self] result in
            if case .failure(let error) = result, error.code == .unavailable {
                uncertainPublishes[sessionId] = attempt
            } else {
                uncertainPublishes[sessionId] = nil
            }
            done(result)
        }
    }

    /// The server API's `publish` (PROTOCOL §10): to every message-enabled session, as
    /// `publisher`; no membership needed, stream channels too. It has no session to carry a
    /// token for: the backend that retries one answered 503 may send it twice.
    func publishFromServer(_ request: ServerPublishRequest, then done: @escaping Completion) throws(BrokerError) {
        let key = request.publish.channel
        let encoded = request.publish.encodedMessage
        guard encoded.count <= configuration.limits.maxMessageBytes else {
            throw BrokerError(.messageTooLarge, "message is \(encoded.count) bytes encoded; at most \(configuration.limits.maxMessageBytes)")
        }
        let bytes = PresenceEvents.message(channel: key, publisher: request.publisher, encodedMessage: encoded, timestamp: clock.now)
        publish(bytes, to: key, from: "", token: "", requiringMember: nil, then: done)
    }

    /// Publishes a message event through the publish script: `recipients` counts the live
    /// message sessions of the cluster but the publishing one; held ones keep it in Redis.
    private func publish(_ bytes: [UInt8], to key: ChannelKey, from sessionId: String, token: String, requiringMember member: Name?,
                         then done: @escaping Completion) {
        let channelKeys = keys.channel(key)
        let publish = PresenceScripts.publish(channelArguments(key, channelKeys, intervalHead: false), session: sessionId, token: token,
                                              requiredMember: member, event: bytes, prefix: keys.prefix,
                                              heldMessageBytes: configuration.limits.heldMessageBytes)
        runScript(publish) { result in
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let reply):
                let decoded = PublishScriptReply(reply)
                switch decoded.outcome {
                case .ok: done(.success(Answer(result: .object(["recipients": .int(decoded.recipients)]))))
                case .notMember: done(.failure(BrokerError(.notInChannel, "publishing to a stream channel requires joining it")))
                default: done(.failure(Self.unexpected(reply)))
                }
            }
        }
    }
}
