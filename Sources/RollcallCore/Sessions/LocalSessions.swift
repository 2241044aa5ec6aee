import RollcallProtocol

/// Sessions on one node: everything in this process, every call completes at once
/// (``SessionEngine``). The user's sessions over `maxSessionsPerUser` are closed here.
package final class LocalSessions: SessionEngine {
    unowned let broker: Broker

    init(broker: Broker) {
        self.broker = broker
    }

    package func login(_ request: LoginRequest, grant: Grant, on connection: ConnectionID,
               then done: @escaping (Result<JSON, BrokerError>, Session?) -> Void) {
        let requestedTimeoutMs = request.presenceTimeoutSeconds.map(Broker.presenceTimeoutMs)
        if let resumeToken = request.resumeToken, let held = broker.directory.heldSession(resumeToken: resumeToken),
           held.userId == request.userId {
            let result = broker.resume(held, on: connection, grant: grant,
                                       presenceTimeoutMs: requestedTimeoutMs ?? held.presenceTimeoutMs,
                                       customStatus: request.customStatus)
            done(.success(result), held)
            return
        }
        let session = broker.newSession(request, on: connection, grant: grant, timeoutMs: requestedTimeoutMs)
        broker.directory.add(session)
        broker.admit(session, on: connection)
        // The newcomer is in before the oldest goes, so the user never reads offline in between.
        closeOldestSessionsOverTheLimit(of: request.userId)
        broker.userStatus.sessionStarted(session, customStatus: request.customStatus)
        done(.success(broker.loginResult(session, resumed: false, channels: nil)), session)
    }

    /// Closes the user's oldest sessions (4409), live or held, until the limit holds.
    private func closeOldestSessionsOverTheLimit(of userId: Name) {
        let sessions = broker.directory.sessions(of: userId)
        let excess = sessions.count - broker.configuration.limits.maxSessionsPerUser
        guard excess > 0 else { return }
        for oldest in sessions.prefix(excess) {
            broker.closeOverTheLimit(oldest)
        }
    }

    package func loggedIn(_ session: Session, then finished: @escaping () -> Void) {
        broker.userStatus.sessionLoggedIn(session)
        finished()
    }

    package func resumed(_ session: Session, kept: [[UInt8]]) -> [JSON] {
        let channels = broker.presence.sessionResumed(session)
        for event in kept { broker.outbox.send(event, to: session) }
        return channels
    }

    package func logout(_ session: Session, then done: @escaping () -> Void) {
        broker.end(session, .logout)
        done()
    }

    package func held(_ session: Session) {}

    package func ended(_ session: Session, _ how: SessionEnd, recorded: (() -> Void)?) {
        broker.presence.sessionEnded(session, how)
    }

    /// `disconnectUser {userId, reason?}` → `{sessions}`: every session of the user, live or
    /// held, ends as by `logout` (leave everywhere; `loggedOut` once the last is gone); live
    /// ones are closed with 4403 and the reason.
    package func disconnectUser(_ request: DisconnectUserRequest, then done: @escaping (Result<JSON, BrokerError>) -> Void) {
        let sessions = broker.directory.sessions(of: request.userId)
        for session in sessions { broker.disconnect(session, reason: request.reason) }
        done(.success(.object(["sessions": .int(sessions.count)])))
    }

    /// `getInfo {}` → `{version, nodes: [{nodeId, sessions}], channels, sessions}`: one node;
    /// `sessions` counts live and held sessions, `channels` those with a member.
    package func info(then done: @escaping (Result<JSON, BrokerError>) -> Void) {
        let sessions = JSON.int(broker.directory.liveCount + broker.heldSessions.count)
        let node: JSON = .object(["nodeId": .string(broker.nodeId), "sessions": sessions])
        done(.success(.object([
            "version": .string(BrokerVersion.current),
            "nodes": .array([node]),
            "channels": .int(broker.presence.liveChannels.count),
            "sessions": sessions,
        ])))
    }

    package var nextDeadline: Timestamp? { nil }
    package func fireDueTimers() {}
    package func storeMessageArrived(channel: [UInt8], payload: [UInt8]) {}
    package func storeResubscribed() {}
    package func storeListening(_ channels: [[UInt8]]) {}
    package func storeBeat(_ beat: StoreBeat) {}
    package func storeLostData() {}
    package func nodeFenced() {}
    package func shutDown() {}
}
