import RollcallProtocol

/// Typed requests, one per op (PROTOCOL §3–§6, plus 1.1 `refresh`), each with its typed result.
public enum Requests {
    /// `login` (§3).
    public struct Login: RollcallRequest, Equatable {
        public typealias Result = LoginResult
        public static let op = Op.login
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
    }

    /// `logout` (§3): the reply, then close 1000.
    public struct Logout: RollcallRequest, Equatable {
        public typealias Result = Done
        public static let op = Op.logout
        public init() {}
        public var arguments: JSONObject { [:] }
    }

    /// `ping` (§3).
    public struct Ping: RollcallRequest, Equatable {
        public typealias Result = PingResult
        public static let op = Op.ping
        public init() {}
        public var arguments: JSONObject { [:] }
    }

    /// `refresh` (§3, 1.1): a fresh token for the logged-in user.
    public struct Refresh: RollcallRequest, Equatable {
        public typealias Result = RefreshResult
        public static let op = Op.refresh
        public var token: String
        public init(token: String) { self.token = token }
        public var arguments: JSONObject { ["token": .string(token)] }
    }

    /// `join` (§4).
    public struct Join: RollcallRequest, Equatable {
        public typealias Result = JoinResult
        public static let op = Op.join
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
    }

    /// `leave` (§4).
    public struct Leave: RollcallRequest, Equatable {
        public typealias Result = Done
        public static let op = Op.leave
        public var channel: ChannelRef
        public init(_ channel: ChannelRef) { self.channel = channel }
        public var arguments: JSONObject { JSONObject(channel.members) }
    }

    /// `publish` (§4).
    public struct Publish: RollcallRequest, Equatable {
        public typealias Result = PublishResult
        public static let op = Op.publish
        public var channel: ChannelRef, message: JSON
        public init(_ channel: ChannelRef, message: JSON) { self.channel = channel; self.message = message }
        public var arguments: JSONObject { JSONObject(channel.members + [("message", message)]) }
    }

    /// `setState` (§4): the full merged state, or `pending` when held before a join.
    public struct SetState: RollcallRequest, Equatable {
        public typealias Result = StateResult
        public static let op = Op.setState
        public var channel: ChannelRef, state: [String: String], ttlSeconds: Double?
        public init(_ channel: ChannelRef, state: [String: String], ttlSeconds: Double? = nil) {
            self.channel = channel; self.state = state; self.ttlSeconds = ttlSeconds
        }
        public var arguments: JSONObject {
            var args = JSONObject(channel.members + [("state", .stringMap(state))])
            if let ttlSeconds { args["ttlSeconds"] = .number(JSONNumber(ttlSeconds)) }
            return args
        }
    }

    /// `removeState` (§4): the full state left.
    public struct RemoveState: RollcallRequest, Equatable {
        public typealias Result = StateResult
        public static let op = Op.removeState
        public var channel: ChannelRef, keys: [String]
        public init(_ channel: ChannelRef, keys: [String]) { self.channel = channel; self.keys = keys }
        public var arguments: JSONObject { JSONObject(channel.members + [("keys", .array(keys.map(JSON.string)))]) }
    }

    /// `getState` (§4): a member's state.
    public struct GetState: RollcallRequest, Equatable {
        public typealias Result = UserState
        public static let op = Op.getState
        public var channel: ChannelRef, userId: String
        public init(_ channel: ChannelRef, userId: String) { self.channel = channel; self.userId = userId }
        public var arguments: JSONObject { JSONObject(channel.members + [("userId", .string(userId))]) }
    }

    /// `getOnlineUsers` (§4): one page.
    public struct GetOnlineUsers: RollcallRequest, Equatable {
        public typealias Result = OnlineUsersPage
        public static let op = Op.getOnlineUsers
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
    }

    /// `getUserChannels` (§4).
    public struct GetUserChannels: RollcallRequest, Equatable {
        public typealias Result = UserChannels
        public static let op = Op.getUserChannels
        public var userId: String
        public init(userId: String) { self.userId = userId }
        public var arguments: JSONObject { ["userId": .string(userId)] }
    }

    /// `setCustomStatus` (§6): the user's new status record.
    public struct SetCustomStatus: RollcallRequest, Equatable {
        public typealias Result = StatusRecord
        public static let op = Op.setCustomStatus
        public var customStatus: String?
        public init(_ customStatus: String?) { self.customStatus = customStatus }
        public var arguments: JSONObject { ["customStatus": customStatus.map(JSON.string) ?? .null] }
        public static func decode(_ result: JSON) throws(DecodingError) -> StatusRecord {
            try (result["status"] ?? .null).decode(StatusRecord.self)
        }
    }

    /// `getUserStatus` (§6).
    public struct GetUserStatus: RollcallRequest, Equatable {
        public typealias Result = StatusBatch
        public static let op = Op.getUserStatus
        public var userIds: [String]
        public init(userIds: [String]) { self.userIds = userIds }
        public var arguments: JSONObject { ["userIds": .array(userIds.map(JSON.string))] }
    }

    /// `subscribeUserStatus` (§6).
    public struct SubscribeUserStatus: RollcallRequest, Equatable {
        public typealias Result = StatusBatch
        public static let op = Op.subscribeUserStatus
        public var userIds: [String], duration: Double?
        public init(userIds: [String], duration: Double? = nil) { self.userIds = userIds; self.duration = duration }
        public var arguments: JSONObject {
            var args: JSONObject = ["userIds": .array(userIds.map(JSON.string))]
            if let duration { args["duration"] = .number(JSONNumber(duration)) }
            return args
        }
    }

    /// `unsubscribeUserStatus` (§6): nil ids unsubscribe from all. Result: the invalid ids.
    public struct UnsubscribeUserStatus: RollcallRequest, Equatable {
        public typealias Result = FailedUsers
        public static let op = Op.unsubscribeUserStatus
        public var userIds: [String]?
        public init(userIds: [String]? = nil) { self.userIds = userIds }
        public var arguments: JSONObject { userIds.map { ["userIds": .array($0.map(JSON.string))] } ?? [:] }
    }

    /// `getSubscriptions` (§6): one page.
    public struct GetSubscriptions: RollcallRequest, Equatable {
        public typealias Result = SubscriptionsPage
        public static let op = Op.getSubscriptions
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
    }
}
