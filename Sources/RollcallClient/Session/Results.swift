import RollcallProtocol

/// The result of `login` (PROTOCOL §3).
public struct LoginResult: Codable, Sendable, Equatable {
    /// The user logged in.
    public var userId: String
    /// The session's platform (`web`, `ios`, …).
    public var platform: String?
    /// The session's id (the same after a resume).
    public var sessionId: String
    /// Resumes this session after a drop (log in with it within the presence timeout).
    public var resumeToken: String
    /// The broker's clock at login (ms since the epoch).
    public var serverTime: Int
    /// True when a held session was taken over (its channels are kept).
    public var resumed: Bool
    /// Seconds the session is held after an abnormal drop.
    public var presenceTimeout: Double?
    /// The channels of a resumed session.
    public var channels: [ChannelRef]
    /// The token's expiry (1.1; ms), nil in auth mode `none`.
    public var expiresAt: Int?
    /// Messages for the held session that did not fit (1.1).
    public var messagesDropped: Int
    /// The broker's limits.
    public var limits: SessionLimits

    enum CodingKeys: String, CodingKey {
        case userId, platform, sessionId, resumeToken, serverTime, resumed, presenceTimeout, channels, expiresAt, messagesDropped, limits
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        userId = try c.decode(String.self, forKey: .userId)
        platform = try c.decodeIfPresent(String.self, forKey: .platform)
        sessionId = try c.decode(String.self, forKey: .sessionId)
        resumeToken = try c.decode(String.self, forKey: .resumeToken)
        serverTime = try c.decode(Int.self, forKey: .serverTime, default: 0)
        resumed = try c.decode(Bool.self, forKey: .resumed, default: false)
        presenceTimeout = try c.decodeIfPresent(Double.self, forKey: .presenceTimeout)
        channels = try c.decode([ChannelRef].self, forKey: .channels, default: [])
        expiresAt = try c.decodeIfPresent(Int.self, forKey: .expiresAt)
        messagesDropped = try c.decode(Int.self, forKey: .messagesDropped, default: 0)
        limits = try c.decode(SessionLimits.self, forKey: .limits, default: SessionLimits())
    }
}

/// The limits a login result announces (PROTOCOL §3; the keys a broker leaves out are nil).
public struct SessionLimits: Codable, Sendable, Equatable {
    /// The largest frame the broker reads (`limits.maxFrameBytes`).
    public var maxFrameBytes: Int?
    /// The largest `publish` message, encoded (`limits.maxMessageBytes`).
    public var maxMessageBytes: Int?
    /// The most the broker batches into one frame (`limits.maxBatchBytes`).
    public var maxBatchBytes: Int?
    /// Channels one session may be in (`limits.maxChannelsPerSession`).
    public var maxChannelsPerSession: Int?
    /// Sessions one user may have (`limits.maxSessionsPerUser`).
    public var maxSessionsPerUser: Int?
    /// The session's sustained request rate (`limits.requestsPerSecond`).
    public var requestsPerSecond: Double?
    /// The session's request burst (`limits.requestBurst`).
    public var requestBurst: Int?
    /// State keys per user and channel (`state.maxKeys`).
    public var maxStateKeys: Int?
    /// Bytes of one state key (`state.maxKeyBytes`).
    public var maxStateKeyBytes: Int?
    /// Bytes of one state value (`state.maxValueBytes`).
    public var maxStateValueBytes: Int?
    /// Bytes of one user's state in a channel (`state.maxTotalBytes`).
    public var maxStateTotalBytes: Int?
    /// Channels with a state held before the join (`state.maxPendingChannels`).
    public var maxPendingChannels: Int?
    /// Bytes of a custom status (`userStatus.customStatusMaxBytes`).
    public var customStatusMaxBytes: Int?
    /// Liveness (1.2): send `ping` after this many seconds with nothing received.
    public var heartbeatIntervalSeconds: Double?
    /// Liveness (1.2): take the link for dead after this many seconds with nothing received.
    public var heartbeatTimeoutSeconds: Double?

    /// No limits announced.
    public init() {}

    /// The liveness interval, or the broker's default (10 s) when not announced (a broker older than 1.2).
    public var livenessInterval: Double { heartbeatIntervalSeconds ?? 10 }
    /// The liveness timeout, or the broker's default (30 s) when not announced.
    public var livenessTimeout: Double { heartbeatTimeoutSeconds ?? 30 }
}

/// The result of `join` (§4).
public struct JoinResult: Codable, Sendable, Equatable {
    /// Member users of the channel.
    public var occupancy: Int
    /// The channel's mode.
    public var mode: PresenceMode

    /// A result.
    public init(occupancy: Int, mode: PresenceMode) {
        self.occupancy = occupancy
        self.mode = mode
    }

    enum CodingKeys: String, CodingKey { case occupancy, mode }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        occupancy = try c.decode(Int.self, forKey: .occupancy)
        mode = try c.decode(PresenceMode.self, forKey: .mode, default: .announce)
    }
}

/// The result of `ping` (§3).
public struct PingResult: Codable, Sendable, Equatable {
    /// The broker's clock (ms since the epoch).
    public var serverTime: Int
}

/// The result of `refresh` (§3, 1.1).
public struct RefreshResult: Codable, Sendable, Equatable {
    /// When the new token expires (ms).
    public var expiresAt: Int?
}

/// The result of `publish` (§4).
public struct PublishResult: Codable, Sendable, Equatable {
    /// Live sessions the message was sent to (held ones that keep it are not counted).
    public var recipients: Int
}

/// The result of `setState` and `removeState` (§4).
public struct StateResult: Codable, Sendable, Equatable {
    /// The user's full state in the channel after the change.
    public var state: [String: String]
    /// True when the user is not a member yet: the state is held and applied at the join.
    public var pending: Bool

    enum CodingKeys: String, CodingKey { case state, pending }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        state = try c.decodeState(forKey: .state) ?? [:]
        pending = try c.decode(Bool.self, forKey: .pending, default: false)
    }
}

/// The result of `getState` (§4).
public struct UserState: Codable, Sendable, Equatable {
    /// The user.
    public var userId: String
    /// The user's state in the channel.
    public var state: [String: String]

    enum CodingKeys: String, CodingKey { case userId, state }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        userId = try c.decode(String.self, forKey: .userId)
        state = try c.decodeState(forKey: .state) ?? [:]
    }
}

/// One page of `getOnlineUsers` (§4); feed ``users`` to a ``Roster``.
public struct OnlineUsersPage: Codable, Sendable, Equatable {
    /// Member users of the channel.
    public var totalOccupancy: Int
    /// The channel's presence `seq` when read (1.1).
    public var seq: Int?
    /// The users of this page, in byte order of user id.
    public var users: [RosterMember]
    /// The next page's cursor, nil on the last page.
    public var nextPage: String?
    /// The user ids of the page.
    public var userIds: [String] { users.map(\.userId) }

    enum CodingKeys: String, CodingKey { case totalOccupancy, seq, users, nextPage }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        totalOccupancy = try c.decode(Int.self, forKey: .totalOccupancy)
        seq = try c.decodeIfPresent(Int.self, forKey: .seq)
        users = try c.decode([RosterMember].self, forKey: .users, default: [])
        nextPage = try c.decodeIfPresent(String.self, forKey: .nextPage)
    }
}

/// The result of `getUserChannels` (§4).
public struct UserChannels: Codable, Sendable, Equatable {
    /// How many channels the user is in (that this session may read).
    public var totalChannel: Int
    /// The channels.
    public var channels: [ChannelRef]
}

/// `{statuses, failed}` of `getUserStatus` and `subscribeUserStatus` (§6).
public struct StatusBatch: Codable, Sendable, Equatable {
    /// The records of the ids that succeeded.
    public var statuses: [StatusRecord]
    /// The ids that failed, with their codes.
    public var failed: [FailedUser]

    enum CodingKeys: String, CodingKey { case statuses, failed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        statuses = try c.decode([StatusRecord].self, forKey: .statuses, default: [])
        failed = try c.decode([FailedUser].self, forKey: .failed, default: [])
    }
}

/// The result of `unsubscribeUserStatus` (§6): the ids that were not valid.
public struct FailedUsers: Codable, Sendable, Equatable {
    /// The ids that failed, with their codes.
    public var failed: [FailedUser]

    enum CodingKeys: String, CodingKey { case failed }

    public init(from decoder: any Decoder) throws {
        failed = try decoder.container(keyedBy: CodingKeys.self).decode([FailedUser].self, forKey: .failed, default: [])
    }
}

/// One subscription of `getSubscriptions` (§6).
public struct Subscription: Codable, Sendable, Equatable {
    /// The followed user.
    public var userId: String
    /// When the subscription expires (ms).
    public var expiresAt: Int?
    /// The user's current record.
    public var status: StatusRecord
}

/// One page of `getSubscriptions` (§6).
public struct SubscriptionsPage: Codable, Sendable, Equatable {
    /// The subscriptions of this page.
    public var subscriptions: [Subscription]
    /// The next page's cursor, nil on the last page.
    public var nextPage: String?

    enum CodingKeys: String, CodingKey { case subscriptions, nextPage }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        subscriptions = try c.decode([Subscription].self, forKey: .subscriptions, default: [])
        nextPage = try c.decodeIfPresent(String.self, forKey: .nextPage)
    }
}
