import RollcallProtocol

/// Cluster mode in the broker: the ops that need Redis are handed to ``ClusterPresence``,
/// whose completions answer the request later, in order (docs/cluster.md, "The core stays pure").
extension Broker: StoreCaller {
    func call(_ commands: [StoreCommand], then: @escaping (Result<[StoreReply], StoreFailure>) -> Void) {
        nextStoreTicket += 1
        let ticket = StoreTicket(nextStoreTicket)
        storeCalls[ticket] = then
        outbox.actions.append(.store(ticket, commands))
    }

    /// True while a store call waits for its replies (shutdown lets the hand-over finish).
    public var awaitsStore: Bool { !storeCalls.isEmpty }

    func listen(_ channel: String) { outbox.actions.append(.listen(Array(channel.utf8))) }

    func unlisten(_ channel: String) { outbox.actions.append(.unlisten(Array(channel.utf8))) }

    /// Hands a presence or user-status op to the cluster engines; false for ops answered here
    /// as on one node.
    func dispatchToCluster(_ op: Op, _ request: Request, session: Session, on connection: ConnectionID,
                           presence: ClusterPresence) throws(BrokerError) -> Bool {
        let limits = configuration.state
        let answer = answerDeferred(request, on: connection)
        switch op {
        case .join:
            try presence.join(JoinRequest(request, limits: limits), from: session, grant: session.grant, then: answer)
        case .leave:
            try presence.leave(LeaveRequest(request), from: session, then: answer)
        case .publish:
            try presence.publish(PublishRequest(request), from: session, grant: session.grant, then: answer)
        case .setState:
            let decoded = try SetStateRequest(request, limits: limits)
            try presence.changeState(of: session, in: decoded.channel, setting: decoded.update, removing: [],
                                     ttlMs: decoded.ttlMs, grant: session.grant, then: answer)
        case .removeState:
            let decoded = try RemoveStateRequest(request)
            try presence.changeState(of: session, in: decoded.channel, setting: nil, removing: decoded.keys,
                                     ttlMs: nil, grant: nil, then: answer)
        case .getState:
            presence.getState(try readableGetState(request, by: session), then: answer)
        case .getOnlineUsers:
            presence.getOnlineUsers(try readableGetOnlineUsers(request, by: session), then: answer)
        case .getUserChannels:
            presence.getUserChannels(try readableGetUserChannels(request, by: session), allowing: session.grant, then: answer)
        case .setCustomStatus:
            try clusterUserStatus!.setCustomStatus(SetCustomStatusRequest(request), from: session, then: answer)
        case .getUserStatus:
            try clusterUserStatus!.getUserStatus(readableGetUserStatus(request, by: session), from: session, then: answer)
        case .subscribeUserStatus:
            try clusterUserStatus!.subscribe(readableSubscribe(request, by: session), from: session, then: answer)
        case .unsubscribeUserStatus:
            try clusterUserStatus!.unsubscribe(UnsubscribeUserStatusRequest(request), from: session, then: answer)
        case .getSubscriptions:
            try clusterUserStatus!.getSubscriptions(GetSubscriptionsRequest(request), from: session, then: answer)
        case .logout:
            clusterLogout(session, on: connection, id: request.id)
        default:
            return false
        }
        return true
    }

    /// The completion that answers `request` once the store replied: the reply, the frames
    /// that follow it (a snapshot), then the requests that waited behind it.
    private func answerDeferred(_ request: Request, on connection: ConnectionID) -> ClusterPresence.Completion {
        let id = request.id
        let channel = try? request.channelKey()
        return { [self] outcome in
            guard connections[connection] != nil else { return }
            reply(to: connection, id: id, outcome.map(\.result), at: outbox.actions.count)
            if case .success(let answer) = outcome {
                for frame in answer.after { outbox.send(frame, to: connection) }
                if let channel, !answer.after.isEmpty { clusterPresence?.drain(channel) }
            }
            resumeQueuedRequests(on: connection)
        }
    }

    /// Handles the frames that waited behind a request, until one waits for the store again.
    func resumeQueuedRequests(on connection: ConnectionID) {
        guard var state = connections[connection] else { return }
        state.awaitsStore = false
        var queued = state.queued
        state.queued = []
        connections[connection] = state
        while !queued.isEmpty {
            let next = queued.removeFirst()
            handleReceived(next, on: connection)
            if connections[connection]?.awaitsStore == true {
                connections[connection]?.queued.insert(contentsOf: queued, at: 0)
                return
            }
        }
    }
}
