import RollcallProtocol

/// How a request handed to an engine is answered: at once when the engine completed within
/// the call (the memory engines), in order once its store replied otherwise (the Redis
/// engines), with the requests that arrived meanwhile handled after it.
extension Broker {
    /// Runs `op` with a completion; returns its result when it completed within the call (the
    /// reply then goes before anything the op queued, as for every request), nil when it will
    /// complete later (``answerDeferred(_:on:)`` replies then). Throws what the op or its
    /// immediate outcome threw.
    func answer(_ request: Request, on connection: ConnectionID,
                _ op: (@escaping EngineCompletion) throws(BrokerError) -> Void) throws(BrokerError) -> JSON? {
        var immediate: Result<EngineAnswer, BrokerError>?
        var returned = false
        // The deferred answer is made only for an op that completes later: the memory engines'
        // ops (every op on one node, publish included) do not pay for it.
        try op { [self] outcome in
            if returned { answerDeferred(request, on: connection)(outcome) } else { immediate = outcome }
        }
        returned = true
        guard let immediate else { return nil }
        let answer = try immediate.get()
        for frame in answer.after { outbox.send(frame, to: connection) }
        return answer.result
    }

    /// The completion that answers `request` once the store replied: the reply, the frames
    /// that follow it (a snapshot), then the requests that waited behind it.
    func answerDeferred(_ request: Request, on connection: ConnectionID) -> EngineCompletion {
        let id = request.id
        let channel = try? request.channelKey()
        return { [self] outcome in
            guard connections[connection] != nil else { return }
            reply(to: connection, id: id, outcome.map(\.result), at: outbox.actions.count)
            if case .success(let answer) = outcome {
                for frame in answer.after { outbox.send(frame, to: connection) }
                if let channel, !answer.after.isEmpty { channelPresence.snapshotSent(in: channel) }
                if request.op == .logout {
                    close(connection, .logout, reason: "logout")
                    return
                }
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
