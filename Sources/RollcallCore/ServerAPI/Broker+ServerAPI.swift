import RollcallProtocol

/// The server API (PROTOCOL §10) inside the core: the transport checked the key and hands
/// each request in as ``InboundEvent/api(_:op:body:)``; the answer leaves as
/// ``Action/respond(_:status:body:)``. The API acts as the server, not as a user: no session,
/// no rate limit, no token globs. The ops it shares with WebSocket decode the body with the
/// same typed requests and run the same engine handlers.
///
/// A single broker answers every op at once, within the same `handle` call; the event/action
/// pair lets an answer come later (cluster mode, where some answers need Redis).
extension Broker {
    /// The node's id in `getInfo`; `standalone` unless the embedder names it.
    public static let standaloneNodeId = "standalone"

    /// Handles one server API request and queues its answer.
    func serverAPIRequest(_ id: APIRequestID, op name: String, body: [UInt8]) {
        metrics.apiRequests += 1
        let op = ServerAPIOp(rawValue: name)
        let started = instrumentation == nil ? 0 : clock.monotonicNanoseconds
        defer {
            if let instrumentation {
                instrumentation.requestHandled(.api(op), nanoseconds: clock.monotonicNanoseconds &- started)
            }
        }
        let answer: (Result<JSON, BrokerError>) -> Void = { [self] outcome in
            if case .failure(let error) = outcome { metrics.errors[error.code, default: 0] += 1 }
            let answer = ServerAPIAnswer(outcome)
            outbox.respond(id, status: answer.status, body: answer.body)
        }
        do throws(BrokerError) {
            guard let op else { throw BrokerError(.unknownOp, "the server API has no op \"\(name)\"") }
            try dispatchServerAPI(op, try Request.serverAPIBody(body, op: op), then: answer)
        } catch {
            answer(.failure(error))
        }
    }

    /// Hands the op to its engine; `answer` is called once, at once on one node, when Redis
    /// replied in a cluster.
    private func dispatchServerAPI(_ op: ServerAPIOp, _ request: Request,
                                   then answer: @escaping (Result<JSON, BrokerError>) -> Void) throws(BrokerError) {
        let engineAnswer: EngineCompletion = { outcome in answer(outcome.map(\.result)) }
        switch op {
        case .publish:
            try channelPresence.publishFromServer(ServerPublishRequest(request), then: engineAnswer)
        case .getOnlineUsers:
            channelPresence.getOnlineUsers(try GetOnlineUsersRequest(request), then: engineAnswer)
        case .getState:
            channelPresence.getState(try GetStateRequest(request), then: engineAnswer)
        case .getUserChannels:
            channelPresence.getUserChannels(try GetUserChannelsRequest(request), allowing: .unlimited, then: engineAnswer)
        case .getUserStatus:
            let batch = try GetUserStatusRequest(request).userIds
            userStatuses.records(of: batch.valid) { outcome in
                answer(outcome.map { records in
                    .object(["statuses": .array(records.map(\.json)), "failed": .array(batch.failed)])
                })
            }
        case .getChannels:
            let decoded = try GetChannelsRequest(request)
            channelPresence.getChannels(decoded, then: engineAnswer)
        case .disconnectUser:
            let decoded = try DisconnectUserRequest(request)
            sessions.disconnectUser(decoded, then: answer)
        case .getInfo:
            sessions.info(then: answer)
        }
    }
}

extension Outbox {
    /// Queues the answer to a server API request.
    func respond(_ id: APIRequestID, status: Int, body: [UInt8]) {
        actions.append(.respond(id, status: status, body: body))
    }
}
