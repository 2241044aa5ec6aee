import RollcallProtocol

/// Read permissions of a token (PROTOCOL §3, 1.1): the `users` claim limits whose status a
/// session may read, the `channels` claim limits which channels' rosters it may read.
///
/// - `getUserStatus`, `subscribeUserStatus`: an id outside `users` is listed in `failed` with
///   `FORBIDDEN`; the rest proceed.
/// - `getUserChannels` of another user outside `users`: `FORBIDDEN`. Its list (and
///   `totalChannel`) holds only the channels `channels` covers.
/// - `getOnlineUsers`, `getState` of a channel outside `channels`: `FORBIDDEN`.
///
/// The session's own user id is always readable. The checks run in the broker's dispatch,
/// before either engine (one node or cluster) sees the request, so both apply them alike.
extension Grant {
    /// True when the session of `viewer` may read `user`'s status and channels.
    func allows(user: Name, viewer: Name) -> Bool {
        guard user != viewer, let patterns = userPatterns else { return true }
        return patterns.contains { ChannelPattern.matches($0, user.string) }
    }

    /// Throws `FORBIDDEN` unless the grant lets its session read the roster of `key`.
    func checkRead(of key: ChannelKey) throws(BrokerError) {
        guard allows(channel: key.name) else {
            throw BrokerError(.forbidden, "the token does not allow reading channel \(key.name)")
        }
    }

    /// Throws `FORBIDDEN` unless the grant lets `viewer` read `user`.
    func checkRead(of user: Name, viewer: Name) throws(BrokerError) {
        guard allows(user: user, viewer: viewer) else {
            throw BrokerError(.forbidden, "the token does not allow reading user \(user)")
        }
    }
}

extension UserIdBatch {
    /// Moves the ids `grant` does not let `viewer` read from `valid` to `failed` (`FORBIDDEN`).
    mutating func refuseUnreadable(by grant: Grant, viewer: Name) {
        guard grant.userPatterns != nil else { return }
        var readable: [Name] = []
        readable.reserveCapacity(valid.count)
        for user in valid {
            if grant.allows(user: user, viewer: viewer) {
                readable.append(user)
            } else {
                failed.append(UserStatusEngine.failure(user.string, .forbidden))
            }
        }
        valid = readable
    }
}

extension Broker {
    /// The read ops' requests with the session's read permissions applied: `FORBIDDEN` thrown
    /// for a channel or user it may not read, unreadable ids moved to `failed`.
    func readableGetState(_ request: Request, by session: Session) throws(BrokerError) -> GetStateRequest {
        let decoded = try GetStateRequest(request)
        try session.grant.checkRead(of: decoded.channel)
        return decoded
    }

    func readableGetOnlineUsers(_ request: Request, by session: Session) throws(BrokerError) -> GetOnlineUsersRequest {
        var decoded = try GetOnlineUsersRequest(request)
        try session.grant.checkRead(of: decoded.channel)
        decoded.viewer = session.userId
        return decoded
    }

    func readableGetUserChannels(_ request: Request, by session: Session) throws(BrokerError) -> GetUserChannelsRequest {
        let decoded = try GetUserChannelsRequest(request)
        try session.grant.checkRead(of: decoded.userId, viewer: session.userId)
        return decoded
    }

    func readableGetUserStatus(_ request: Request, by session: Session) throws(BrokerError) -> GetUserStatusRequest {
        var decoded = try GetUserStatusRequest(request)
        decoded.userIds.refuseUnreadable(by: session.grant, viewer: session.userId)
        return decoded
    }

    func readableSubscribe(_ request: Request, by session: Session) throws(BrokerError) -> SubscribeUserStatusRequest {
        var decoded = try SubscribeUserStatusRequest(request)
        decoded.userIds.refuseUnreadable(by: session.grant, viewer: session.userId)
        return decoded
    }
}
