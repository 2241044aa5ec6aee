import RollcallProtocol

// The presence ops' arguments, decoded and validated from a request frame before any state
// is read (PROTOCOL §4). Plain values, independent of sessions, so that any presence engine
// (in memory, or on a shared store) can take them. Wrong JSON types are `INVALID_REQUEST`,
// values out of range `INVALID_ARGUMENT` or the op's own code, in the order they are listed.

/// `ttlSeconds` of `setState` and `join` (1.1): 0.1 to 86400 seconds, as milliseconds.
private func stateTTL(_ request: Request) throws(BrokerError) -> Int64? {
    guard let seconds = try request.optionalNumber("ttlSeconds") else { return nil }
    guard seconds >= 0.1, seconds <= 86_400 else {
        throw BrokerError(.invalidArgument, "ttlSeconds must be 0.1...86400 seconds")
    }
    return seconds.milliseconds
}

/// `join {channel, channelType?, presence?, messages?, state?, ttlSeconds?}`.
package struct JoinRequest: Sendable {
    package let channel: ChannelKey
    package let flags: JoinFlags
    package let state: StateUpdate?
    /// TTL of the keys in `state`, in milliseconds.
    package let ttlMs: Int64?

    init(_ request: Request, limits: Configuration.State) throws(BrokerError) {
        channel = try request.channelKey()
        flags = JoinFlags(
            presence: try request.optionalBool("presence") ?? true,
            messages: try request.optionalBool("messages") ?? true)
        state = try request.optionalObject("state").map { (object) throws(BrokerError) in try StateUpdate(object, limits: limits) }
        ttlMs = try stateTTL(request)
    }

    /// The member's state after this join: `existing` (the user's state in the channel, if a
    /// member already), then the keys held for the join (`pending`), then the join's own;
    /// checked against `state.maxKeys` and `maxTotalBytes` when anything was merged. One node
    /// and a cluster merge the same way.
    package func mergedState(onto existing: PresenceState, pending: PresenceState?,
                     limits: Configuration.State) throws(BrokerError) -> PresenceState {
        guard pending != nil || state != nil else { return existing }
        var merged = existing
        for entry in pending?.entries ?? [] { merged.set(entry.key, entry.value) }
        for entry in state?.entries ?? [] { merged.set(entry.key, entry.value) }
        try merged.checkTotals(limits)
        return merged
    }
}

extension Broker {
    /// What a `join` must pass before any engine sees it: the token's channel globs, and
    /// `limits.maxChannelsPerSession` for a channel the session is not in yet.
    func checkJoinAllowed(_ request: JoinRequest, from session: Session) throws(BrokerError) {
        try session.grant.checkAccess(to: request.channel)
        let limit = configuration.limits.maxChannelsPerSession
        if session.presence.joined[request.channel] == nil, session.presence.joined.count >= limit {
            throw BrokerError(.tooManyChannels, "a session may join at most \(limit) channels")
        }
    }
}

/// `leave {channel, channelType?}`.
package struct LeaveRequest: Sendable {
    package let channel: ChannelKey

    init(_ request: Request) throws(BrokerError) {
        channel = try request.channelKey()
    }
}

/// `publish {channel, channelType?, message}`; the message is encoded once, here. Its size
/// is checked by the engine, after the token's channel grant (`FORBIDDEN` comes first).
package struct PublishRequest: Sendable {
    package let channel: ChannelKey
    package let encodedMessage: [UInt8]

    init(_ request: Request) throws(BrokerError) {
        channel = try request.channelKey()
        guard let message = request.arguments["message"] else { throw BrokerError(.invalidRequest, "missing message") }
        encodedMessage = message.encoded()
    }
}

/// `setState {channel, channelType?, state, ttlSeconds?}`.
package struct SetStateRequest: Sendable {
    package let channel: ChannelKey
    package let update: StateUpdate
    /// TTL of the keys set, in milliseconds; nil clears their deadlines.
    package let ttlMs: Int64?

    init(_ request: Request, limits: Configuration.State) throws(BrokerError) {
        channel = try request.channelKey()
        guard let object = try request.optionalObject("state") else { throw BrokerError(.invalidRequest, "missing state") }
        update = try StateUpdate(object, limits: limits)
        ttlMs = try stateTTL(request)
    }
}

/// `removeState {channel, channelType?, keys}`.
package struct RemoveStateRequest: Sendable {
    package let channel: ChannelKey
    package let keys: [String]

    init(_ request: Request) throws(BrokerError) {
        channel = try request.channelKey()
        guard let keys = try request.optionalStringArray("keys") else { throw BrokerError(.invalidRequest, "missing keys") }
        self.keys = keys
    }
}

/// `getState {channel, channelType?, userId}`.
package struct GetStateRequest: Sendable {
    package let channel: ChannelKey
    package let userId: Name

    init(_ request: Request) throws(BrokerError) {
        channel = try request.channelKey()
        userId = try request.name("userId")
    }
}

/// `getOnlineUsers {channel, channelType?, includeUserId?, includeState?, page?, pageSize?}`.
package struct GetOnlineUsersRequest: Sendable {
    package let channel: ChannelKey
    package let includeUserId: Bool
    package let includeState: Bool
    package let pageSize: Int
    /// The user the page starts after (decoded `page`), nil for the first page.
    package let after: Name?
    /// The reading session's user (nil from the server API): shown when it joined since the
    /// channel's last event, as in its snapshot (``PresenceEngine/getOnlineUsers(_:)``).
    package var viewer: Name?

    init(_ request: Request) throws(BrokerError) {
        channel = try request.channelKey()
        includeUserId = try request.optionalBool("includeUserId") ?? true
        includeState = try request.optionalBool("includeState") ?? false
        pageSize = try request.optionalInteger("pageSize", in: 1...1000) ?? 100
        let page = try request.optionalString("page")
        if includeState, !includeUserId {
            throw BrokerError(.invalidArgument, "includeState needs includeUserId")
        }
        var after: Name?
        if let page, !page.isEmpty {
            guard let decoded = PageCursor.decode(page) else { throw BrokerError(.invalidArgument, "page is not a valid cursor") }
            after = decoded
        }
        self.after = after
    }
}

/// `getUserChannels {userId}`.
package struct GetUserChannelsRequest: Sendable {
    package let userId: Name

    init(_ request: Request) throws(BrokerError) {
        userId = try request.name("userId")
    }
}
