import RollcallProtocol

/// Typed requests, one per op (PROTOCOL v1 §3–§6, plus v1.1 `refresh`).
public enum Requests {
    /// `login` (§3).
    public struct Login: RollcallRequest {
        public static let op = "login"
        public var userId: String, platform: String?, token: String?, customStatus: String?
        public var presenceTimeout: Double?, resumeToken: String?
        public init(userId: String, platform: String? = nil, token: String? = nil, customStatus: String? = nil,
                    presenceTimeout: Double? = nil, resumeToken: String? = nil) {
            self.userId = userId; self.platform = platform; self.token = token
            self.customStatus = customStatus; self.presenceTimeout = presenceTimeout; self.resumeToken = resumeToken
        }
        public var arguments: JSONObject {
            var args: JSONObject = ["userId": .string(userId)]
            if let platform { args["platform"] = .string(platform) }
            if let token { args["token"] = .string(token) }
            if let customStatus { args["customStatus"] = .string(customStatus) }
            if let presenceTimeout { args["presenceTimeout"] = .number(JSONNumber(presenceTimeout)) }
            if let resumeToken { args["resumeToken"] = .string(resumeToken) }
            return args
        }
        public static func decode(_ result: JSON) -> LoginResult? {
            guard let userId = result["userId"]?.stringValue, let token = result["resumeToken"]?.stringValue else { return nil }
            return LoginResult(userId: userId, sessionId: result["sessionId"]?.stringValue ?? result["sessionId"]?.compactString ?? "",
                               resumeToken: token, serverTime: result["serverTime"]?.int ?? 0,
                               resumed: result["resumed"]?.boolValue ?? false,
                               channels: (result["channels"]?.arrayValue ?? []).compactMap(ChannelRef.init),
                               expiresAt: result["expiresAt"]?.int, messagesDropped: result["messagesDropped"]?.int ?? 0)
        }
    }

    /// `logout` (§3): the reply, then close 1000.
    public struct Logout: RollcallRequest {
        public static let op = "logout"
        public init() {}
        public var arguments: JSONObject { [:] }
        public static func decode(_ result: JSON) -> Done? { Done() }
    }

    /// `ping` (§3) → `serverTime`.
    public struct Ping: RollcallRequest {
        public static let op = "ping"
        public init() {}
        public var arguments: JSONObject { [:] }
        public static func decode(_ result: JSON) -> Int? { result["serverTime"]?.int }
    }

    /// `refresh` (§3, 1.1) → the new `expiresAt`.
    public struct Refresh: RollcallRequest {
        public static let op = "refresh"
        public var token: String
        public init(token: String) { self.token = token }
        public var arguments: JSONObject { ["token": .string(token)] }
        public static func decode(_ result: JSON) -> Int?? { .some(result["expiresAt"]?.int) }
    }

    /// `join` (§4).
    public struct Join: RollcallRequest {
        public static let op = "join"
        public var channel: ChannelRef, presence: Bool, messages: Bool, state: [String: String]?
        public init(_ channel: ChannelRef, presence: Bool = true, messages: Bool = true, state: [String: String]? = nil) {
            self.channel = channel; self.presence = presence; self.messages = messages; self.state = state
        }
        public var arguments: JSONObject {
            var args = JSONObject(channel.members)
            args["presence"] = .bool(presence)
            args["messages"] = .bool(messages)
            if let state { args["state"] = .stringMap(state) }
            return args
        }
        public static func decode(_ result: JSON) -> JoinResult? {
            guard let occupancy = result["occupancy"]?.int else { return nil }
            return JoinResult(occupancy: occupancy, mode: result["mode"]?.stringValue ?? "announce")
        }
    }

    /// `leave` (§4).
    public struct Leave: RollcallRequest {
        public static let op = "leave"
        public var channel: ChannelRef
        public init(_ channel: ChannelRef) { self.channel = channel }
        public var arguments: JSONObject { JSONObject(channel.members) }
        public static func decode(_ result: JSON) -> Done? { Done() }
    }

    /// `publish` (§4) → `recipients`.
    public struct Publish: RollcallRequest {
        public static let op = "publish"
        public var channel: ChannelRef, message: JSON
        public init(_ channel: ChannelRef, message: JSON) { self.channel = channel; self.message = message }
        public var arguments: JSONObject { JSONObject(channel.members + [("message", message)]) }
        public static func decode(_ result: JSON) -> Int? { result["recipients"]?.int }
    }

    /// `setState` (§4) → the full merged state (`nil` when held as pending before a join).
    public struct SetState: RollcallRequest {
        public static let op = "setState"
        public var channel: ChannelRef, state: [String: String], ttlSeconds: Double?
        public init(_ channel: ChannelRef, state: [String: String], ttlSeconds: Double? = nil) {
            self.channel = channel; self.state = state; self.ttlSeconds = ttlSeconds
        }
        public var arguments: JSONObject {
            var args = JSONObject(channel.members + [("state", .stringMap(state))])
            if let ttlSeconds { args["ttlSeconds"] = .number(JSONNumber(ttlSeconds)) }
            return args
        }
        public static func decode(_ result: JSON) -> [String: String]? { result["state"]?.stringMap ?? [:] }
    }

    /// `removeState` (§4) → the full state left.
    public struct RemoveState: RollcallRequest {
        public static let op = "removeState"
        public var channel: ChannelRef, keys: [String]
        public init(_ channel: ChannelRef, keys: [String]) { self.channel = channel; self.keys = keys }
        public var arguments: JSONObject { JSONObject(channel.members + [("keys", .array(keys.map(JSON.string)))]) }
        public static func decode(_ result: JSON) -> [String: String]? { result["state"]?.stringMap ?? [:] }
    }

    /// `getState` (§4) → the user's state.
    public struct GetState: RollcallRequest {
        public static let op = "getState"
        public var channel: ChannelRef, userId: String
        public init(_ channel: ChannelRef, userId: String) { self.channel = channel; self.userId = userId }
        public var arguments: JSONObject { JSONObject(channel.members + [("userId", .string(userId))]) }
        public static func decode(_ result: JSON) -> [String: String]? { result["state"]?.stringMap }
    }

    /// `getOnlineUsers` (§4): one page.
    public struct GetOnlineUsers: RollcallRequest {
        public static let op = "getOnlineUsers"
        public var channel: ChannelRef, includeState: Bool, page: String?, pageSize: Int?
        public init(_ channel: ChannelRef, includeState: Bool = true, page: String? = nil, pageSize: Int? = nil) {
            self.channel = channel; self.includeState = includeState; self.page = page; self.pageSize = pageSize
        }
        public var arguments: JSONObject {
            var args = JSONObject(channel.members + [("includeState", .bool(includeState))])
            if let page { args["page"] = .string(page) }
            if let pageSize { args["pageSize"] = .int(pageSize) }
            return args
        }
        public static func decode(_ result: JSON) -> OnlineUsersPage? {
            guard let total = result["totalOccupancy"]?.int else { return nil }
            return OnlineUsersPage(totalOccupancy: total, seq: result["seq"]?.int, users: result["users"]?.arrayValue ?? [],
                                   nextPage: result["nextPage"]?.stringValue)
        }
    }

    /// `getUserChannels` (§4).
    public struct GetUserChannels: RollcallRequest {
        public static let op = "getUserChannels"
        public var userId: String
        public init(userId: String) { self.userId = userId }
        public var arguments: JSONObject { ["userId": .string(userId)] }
        public static func decode(_ result: JSON) -> [ChannelRef]? { (result["channels"]?.arrayValue ?? []).compactMap(ChannelRef.init) }
    }

    /// `setCustomStatus` (§6) → the user's status record.
    public struct SetCustomStatus: RollcallRequest {
        public static let op = "setCustomStatus"
        public var customStatus: String?
        public init(_ customStatus: String?) { self.customStatus = customStatus }
        public var arguments: JSONObject { ["customStatus": customStatus.map(JSON.string) ?? .null] }
        public static func decode(_ result: JSON) -> JSON? { result["status"] }
    }

    /// `getUserStatus` (§6).
    public struct GetUserStatus: RollcallRequest {
        public static let op = "getUserStatus"
        public var userIds: [String]
        public init(userIds: [String]) { self.userIds = userIds }
        public var arguments: JSONObject { ["userIds": .array(userIds.map(JSON.string))] }
        public static func decode(_ result: JSON) -> StatusBatch? { StatusBatch(result) }
    }

    /// `subscribeUserStatus` (§6).
    public struct SubscribeUserStatus: RollcallRequest {
        public static let op = "subscribeUserStatus"
        public var userIds: [String], duration: Double?
        public init(userIds: [String], duration: Double? = nil) { self.userIds = userIds; self.duration = duration }
        public var arguments: JSONObject {
            var args: JSONObject = ["userIds": .array(userIds.map(JSON.string))]
            if let duration { args["duration"] = .number(JSONNumber(duration)) }
            return args
        }
        public static func decode(_ result: JSON) -> StatusBatch? { StatusBatch(result) }
    }

    /// `unsubscribeUserStatus` (§6): nil ids unsubscribe from all. Result: the failed ids.
    public struct UnsubscribeUserStatus: RollcallRequest {
        public static let op = "unsubscribeUserStatus"
        public var userIds: [String]?
        public init(userIds: [String]? = nil) { self.userIds = userIds }
        public var arguments: JSONObject { userIds.map { ["userIds": .array($0.map(JSON.string))] } ?? [:] }
        public static func decode(_ result: JSON) -> [FailedUser]? { result.failedUsers }
    }

    /// `getSubscriptions` (§6): one page of `{userId, expiresAt, status}` records.
    public struct GetSubscriptions: RollcallRequest {
        public static let op = "getSubscriptions"
        public var userIds: [String]?, page: String?, pageSize: Int?
        public init(userIds: [String]? = nil, page: String? = nil, pageSize: Int? = nil) {
            self.userIds = userIds; self.page = page; self.pageSize = pageSize
        }
        public var arguments: JSONObject {
            var args = JSONObject()
            if let userIds { args["userIds"] = .array(userIds.map(JSON.string)) }
            if let page { args["page"] = .string(page) }
            if let pageSize { args["pageSize"] = .int(pageSize) }
            return args
        }
        public static func decode(_ result: JSON) -> SubscriptionsPage? {
            SubscriptionsPage(subscriptions: result["subscriptions"]?.arrayValue ?? [], nextPage: result["nextPage"]?.stringValue)
        }
    }
}

/// The result of `login`.
public struct LoginResult: Sendable, Equatable {
    public var userId: String, sessionId: String, resumeToken: String, serverTime: Int
    /// True when a held session was taken over (its channels are kept).
    public var resumed: Bool
    /// The channels of a resumed session.
    public var channels: [ChannelRef]
    /// The token's expiry (1.1), nil in `none` mode.
    public var expiresAt: Int?
    /// Messages for the held session that did not fit (1.1).
    public var messagesDropped: Int
}

/// The result of `join`.
public struct JoinResult: Sendable, Equatable {
    public var occupancy: Int
    /// `announce` or `interval`.
    public var mode: String
}

/// One page of `getOnlineUsers`; `users` are `{userId, state?, info?}` (feed them to a ``Roster``).
public struct OnlineUsersPage: Sendable, Equatable {
    public var totalOccupancy: Int
    /// The channel's presence `seq` when read (1.1).
    public var seq: Int?
    public var users: [JSON]
    public var nextPage: String?
    /// The user ids of the page.
    public var userIds: [String] { users.compactMap { $0["userId"]?.stringValue } }
}

/// `{statuses, failed}` of `getUserStatus` and `subscribeUserStatus`.
public struct StatusBatch: Sendable, Equatable {
    /// Status records (`{userId, status, customStatus, platforms, …}`).
    public var statuses: [JSON]
    public var failed: [FailedUser]
    init(_ result: JSON) {
        statuses = result["statuses"]?.arrayValue ?? []
        failed = result.failedUsers
    }
}

/// One page of `getSubscriptions`.
public struct SubscriptionsPage: Sendable, Equatable {
    /// `{userId, expiresAt, status}` records.
    public var subscriptions: [JSON]
    public var nextPage: String?
}
