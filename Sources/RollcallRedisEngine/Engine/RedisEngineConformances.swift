import RollcallCore
import RollcallProtocol

// The Redis engine's presence and user status behind the core's seam (``ChannelPresence``,
// ``UserStatuses``): the ops whose names or shapes differ from the engines' own.

extension ClusterPresence: ChannelPresence {
    func setState(_ request: SetStateRequest, from session: Session, grant: Grant,
                  then done: @escaping EngineCompletion) throws(BrokerError) {
        try changeState(of: session, in: request.channel, setting: request.update, removing: [],
                        ttlMs: request.ttlMs, grant: grant, then: done)
    }

    func removeState(_ request: RemoveStateRequest, from session: Session, then done: @escaping EngineCompletion) throws(BrokerError) {
        try changeState(of: session, in: request.channel, setting: nil, removing: request.keys,
                        ttlMs: nil, grant: nil, then: done)
    }

    func getChannels(_ request: GetChannelsRequest, then done: @escaping EngineCompletion) {
        getChannelsInCluster(request) { outcome in done(outcome.map { EngineAnswer(result: $0) }) }
    }

    func snapshotSent(in channel: ChannelKey) { drain(channel) }
}

extension ClusterUserStatus: UserStatuses {
    /// The record follows in Redis once the session's end is recorded there (after a shutdown
    /// the session is handed over, held, and the user stays online).
    func sessionEnded(_ session: Session, _ how: SessionEnd) { sessionLeftNode(session) }

    var subscriptionCount: Int { subscriptionsInCluster }
}
