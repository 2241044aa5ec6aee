import RollcallProtocol

/// Channel presence (PROTOCOL §4) behind one seam: the ops the broker hands to an engine once
/// it has decoded and checked the request. ``PresenceEngine`` keeps everything in this
/// process and completes at once; the Redis engine (`RollcallRedisEngine`) keeps the shared truth in Redis and
/// completes when its script answered (docs/architecture.md). A call that throws has changed
/// nothing and does not complete.
package protocol ChannelPresence: AnyObject {
    /// `join`: the session becomes a member (its user, if not one already), with the merged state.
    func join(_ request: JoinRequest, from session: Session, grant: Grant,
              then done: @escaping EngineCompletion) throws(BrokerError)
    /// `leave`: the session leaves; its user too when it was the last of the user's sessions.
    func leave(_ request: LeaveRequest, from session: Session, then done: @escaping EngineCompletion) throws(BrokerError)
    /// `publish`: a `message` event to the channel's sessions that asked for messages.
    func publish(_ request: PublishRequest, from session: Session, grant: Grant,
                 then done: @escaping EngineCompletion) throws(BrokerError)
    /// `setState`: merges keys into the member's state (or holds them until the join).
    func setState(_ request: SetStateRequest, from session: Session, grant: Grant,
                  then done: @escaping EngineCompletion) throws(BrokerError)
    /// `removeState`: removes keys from the member's state.
    func removeState(_ request: RemoveStateRequest, from session: Session, then done: @escaping EngineCompletion) throws(BrokerError)
    /// `getState`: one member's state.
    func getState(_ request: GetStateRequest, then done: @escaping EngineCompletion)
    /// `getOnlineUsers`: a page of the channel's roster as of its last presence event.
    func getOnlineUsers(_ request: GetOnlineUsersRequest, then done: @escaping EngineCompletion)
    /// `getUserChannels`: the channels a user is a member of, as far as `grant` may see.
    func getUserChannels(_ request: GetUserChannelsRequest, allowing grant: Grant, then done: @escaping EngineCompletion)
    /// The server API's `publish` (PROTOCOL §10): no session, no membership needed.
    func publishFromServer(_ request: ServerPublishRequest, then done: @escaping EngineCompletion) throws(BrokerError)
    /// The server API's `getChannels` (PROTOCOL §10): a page of the channels with a member.
    func getChannels(_ request: GetChannelsRequest, then done: @escaping EngineCompletion)
    /// A reply with a snapshot (``EngineAnswer/after``) went out to a session in `channel`:
    /// the events that waited behind the snapshot may follow.
    func snapshotSent(in channel: ChannelKey)
}

extension PresenceEngine: ChannelPresence {
    package func join(_ request: JoinRequest, from session: Session, grant: Grant,
              then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try join(request, from: session, grant: grant))))
    }

    package func leave(_ request: LeaveRequest, from session: Session, then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try leave(request, from: session))))
    }

    package func publish(_ request: PublishRequest, from session: Session, grant: Grant,
                 then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try publish(request, from: session, grant: grant))))
    }

    package func setState(_ request: SetStateRequest, from session: Session, grant: Grant,
                  then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try setState(request, from: session, grant: grant))))
    }

    package func removeState(_ request: RemoveStateRequest, from session: Session, then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try removeState(request, from: session))))
    }

    package func getState(_ request: GetStateRequest, then done: @escaping EngineCompletion) {
        done(.answering { () throws(BrokerError) in try getState(request) })
    }

    package func getOnlineUsers(_ request: GetOnlineUsersRequest, then done: @escaping EngineCompletion) {
        done(.answering { () throws(BrokerError) in try getOnlineUsers(request) })
    }

    package func getUserChannels(_ request: GetUserChannelsRequest, allowing grant: Grant, then done: @escaping EngineCompletion) {
        done(.answering { () throws(BrokerError) in try getUserChannels(request, allowing: grant) })
    }

    package func publishFromServer(_ request: ServerPublishRequest, then done: @escaping EngineCompletion) throws(BrokerError) {
        done(.success(EngineAnswer(result: try publishFromServer(request))))
    }

    package func getChannels(_ request: GetChannelsRequest, then done: @escaping EngineCompletion) {
        done(.success(EngineAnswer(result: getChannels(request))))
    }

    /// One node sends a snapshot with its reply at once; nothing waits behind it.
    package func snapshotSent(in channel: ChannelKey) {}
}
