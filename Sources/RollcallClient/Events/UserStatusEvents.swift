/// A user's status record (PROTOCOL §6).
public struct StatusRecord: Codable, Sendable, Equatable {
    /// The user id.
    public var userId: String
    /// `online`, `offline` or `loggedOut`.
    public var status: UserStatus
    /// The custom status text, nil when none.
    public var customStatus: String?
    /// The platforms of the user's live and held sessions.
    public var platforms: [String]
    /// When anything of the record last changed (ms since the epoch).
    public var lastUpdateTime: Int?
    /// When ``status`` last changed (ms).
    public var lastOnlineStatusUpdateTime: Int?
    /// When ``customStatus`` last changed (ms).
    public var lastCustomStatusUpdateTime: Int?

    /// A record.
    public init(userId: String, status: UserStatus, customStatus: String? = nil, platforms: [String] = [],
                lastUpdateTime: Int? = nil, lastOnlineStatusUpdateTime: Int? = nil, lastCustomStatusUpdateTime: Int? = nil) {
        self.userId = userId; self.status = status; self.customStatus = customStatus; self.platforms = platforms
        self.lastUpdateTime = lastUpdateTime; self.lastOnlineStatusUpdateTime = lastOnlineStatusUpdateTime
        self.lastCustomStatusUpdateTime = lastCustomStatusUpdateTime
    }

    enum CodingKeys: String, CodingKey {
        case userId, status, customStatus, platforms, lastUpdateTime, lastOnlineStatusUpdateTime, lastCustomStatusUpdateTime
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        userId = try c.decode(String.self, forKey: .userId)
        status = try c.decode(UserStatus.self, forKey: .status)
        customStatus = try c.decodeIfPresent(String.self, forKey: .customStatus)
        platforms = try c.decode([String].self, forKey: .platforms, default: [])
        lastUpdateTime = try c.decodeIfPresent(Int.self, forKey: .lastUpdateTime)
        lastOnlineStatusUpdateTime = try c.decodeIfPresent(Int.self, forKey: .lastOnlineStatusUpdateTime)
        lastCustomStatusUpdateTime = try c.decodeIfPresent(Int.self, forKey: .lastCustomStatusUpdateTime)
    }
}

/// A `userStatus` event (PROTOCOL §6): records of followed users (or of this user's own other
/// sessions) that changed, or the catch-up after login.
public struct UserStatusEvent: Codable, Sendable, Equatable {
    /// The changed records.
    public var statuses: [StatusRecord]
    /// An event.
    public init(statuses: [StatusRecord]) { self.statuses = statuses }
}

/// A `subscriptions` event (PROTOCOL §6): another session of this user (un)subscribed, or the
/// cap dropped subscriptions.
public struct SubscriptionsEvent: Codable, Sendable, Equatable {
    /// User ids now followed.
    public var added: [String]
    /// User ids no longer followed.
    public var removed: [String]
    /// An event.
    public init(added: [String] = [], removed: [String] = []) {
        self.added = added
        self.removed = removed
    }

    enum CodingKeys: String, CodingKey { case added, removed }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        added = try c.decode([String].self, forKey: .added, default: [])
        removed = try c.decode([String].self, forKey: .removed, default: [])
    }
}

/// A `session` event (PROTOCOL §3, 1.1): ``Kind/refreshRequired`` before the token expires.
public struct SessionEvent: Codable, Sendable, Equatable {
    /// What the broker says about the session.
    public struct Kind: OpenVocabulary {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The token expires at ``SessionEvent/expiresAt``: send `refresh` with a new one.
        public static let refreshRequired = Kind(rawValue: "refreshRequired")
    }

    /// What happened.
    public var type: Kind
    /// When the token in force expires (ms since the epoch).
    public var expiresAt: Int?

    /// An event.
    public init(type: Kind, expiresAt: Int? = nil) {
        self.type = type
        self.expiresAt = expiresAt
    }
}
