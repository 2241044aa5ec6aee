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
                let label = op.map { "api.\($0.rawValue)" } ?? "api.unknown"
                instrumentation.requestHandled(op: label, nanoseconds: clock.monotonicNanoseconds &- started)
            }
        }
        let outcome: Result<JSON, BrokerError>
        do throws(BrokerError) {
            guard let op else { throw BrokerError(.unknownOp, "the server API has no op \"\(name)\"") }
            let request = try Request.serverAPIBody(body, op: name)
            // Cluster mode: the answer comes when Redis replied.
            if try dispatchServerAPIToCluster(op, request, id: id) { return }
            outcome = .success(try dispatchServerAPI(op, request))
        } catch {
            metrics.errors[error.code, default: 0] += 1
            outcome = .failure(error)
        }
        let answer = ServerAPIAnswer(outcome)
        outbox.respond(id, status: answer.status, body: answer.body)
    }

    private func dispatchServerAPI(_ op: ServerAPIOp, _ request: Request) throws(BrokerError) -> JSON {
        switch op {
        case .publish:
            return try presence.publishFromServer(ServerPublishRequest(request))
        case .getOnlineUsers:
            return try presence.getOnlineUsers(GetOnlineUsersRequest(request))
        case .getState:
            return try presence.getState(GetStateRequest(request))
        case .getUserChannels:
            return try presence.getUserChannels(GetUserChannelsRequest(request))
        case .getUserStatus:
            return userStatus.statuses(try GetUserStatusRequest(request))
        case .getChannels:
            return presence.getChannels(try GetChannelsRequest(request))
        case .disconnectUser:
            return disconnectUser(try DisconnectUserRequest(request))
        case .getInfo:
            return info()
        }
    }

    /// `disconnectUser {userId, reason?}` → `{sessions}`: every session of the user, live or
    /// held, ends as by `logout` (leave everywhere; `loggedOut` once the last is gone); live
    /// ones are closed with 4403 and the reason.
    func disconnectUser(_ request: DisconnectUserRequest) -> JSON {
        let sessions = directory.sessions(of: request.userId)
        for session in sessions {
            let connection = session.connection
            end(session, .logout)
            if let connection { close(connection, .disconnectedByServer, reason: request.reason) }
        }
        return .object(["sessions": .int(sessions.count)])
    }

    /// `getInfo {}` → `{version, nodes: [{nodeId, sessions}], channels, sessions}`: one node
    /// (``nodeId``); `sessions` counts live and held sessions, `channels` those with a member.
    func info() -> JSON {
        let sessions = JSON.int(directory.liveCount + heldSessions.count)
        let node: JSON = .object(["nodeId": .string(nodeId), "sessions": sessions])
        return .object([
            "version": .string(BrokerVersion.current),
            "nodes": .array([node]),
            "channels": .int(presence.liveChannels.count),
            "sessions": sessions,
        ])
    }
}

extension Outbox {
    /// Queues the answer to a server API request.
    func respond(_ id: APIRequestID, status: Int, body: [UInt8]) {
        actions.append(.respond(id, status: status, body: body))
    }
}
