/// The stable error codes of protocol v1 (PROTOCOL §7). The raw value is what goes on the wire.
public enum ErrorCode: String, Sendable, CaseIterable, Hashable {
    case invalidJSON = "INVALID_JSON"
    case invalidRequest = "INVALID_REQUEST"
    case unknownOp = "UNKNOWN_OP"
    case invalidArgument = "INVALID_ARGUMENT"
    case notLoggedIn = "NOT_LOGGED_IN"
    case alreadyLoggedIn = "ALREADY_LOGGED_IN"
    case unauthorized = "UNAUTHORIZED"
    case forbidden = "FORBIDDEN"
    case notInChannel = "NOT_IN_CHANNEL"
    case userNotPresent = "USER_NOT_PRESENT"
    case tooManyKeys = "TOO_MANY_KEYS"
    case keyTooLong = "KEY_TOO_LONG"
    case valueTooLong = "VALUE_TOO_LONG"
    case stateTooLarge = "STATE_TOO_LARGE"
    case tooManyPendingStates = "TOO_MANY_PENDING_STATES"
    case tooManyChannels = "TOO_MANY_CHANNELS"
    case tooManyUsers = "TOO_MANY_USERS"
    case messageTooLarge = "MESSAGE_TOO_LARGE"
    case customStatusTooLong = "CUSTOM_STATUS_TOO_LONG"
    case cannotSubscribeSelf = "CANNOT_SUBSCRIBE_SELF"
    case targetSubscriberLimit = "TARGET_SUBSCRIBER_LIMIT"
    case rateLimited = "RATE_LIMITED"
    case `internal` = "INTERNAL"
    /// The cluster's store (Redis) cannot be reached (1.1, PROTOCOL §9); carries `retryAfterMs`.
    case unavailable = "UNAVAILABLE"
}

/// WebSocket close codes the broker uses (PROTOCOL §7).
public enum CloseCode: UInt16, Sendable, CaseIterable {
    /// `logout`.
    case logout = 1000
    /// Broker shutdown.
    case shutdown = 1001
    /// A binary frame was received.
    case binaryFrame = 1003
    /// A text frame was not valid UTF-8.
    case invalidUTF8 = 1007
    /// A message exceeded `limits.maxFrameBytes`.
    case frameTooBig = 1009
    /// 1.1: service restart (the cluster's data was lost, §9); log in again.
    case serviceRestart = 1012
    /// The outbound queue exceeded `limits.maxOutboundBytes`.
    case slowConsumer = 1013
    /// Bad or expired token.
    case unauthorized = 4401
    /// 1.1: disconnected by the server API's `disconnectUser` (§10); the reason is the caller's.
    case disconnectedByServer = 4403
    /// No login within `limits.loginTimeoutSeconds`.
    case loginTimeout = 4408
    /// Too many sessions for this user; the oldest is closed.
    case sessionLimit = 4409

    /// The reason sent with ``serviceRestart`` when the cluster lost its data. Clients match
    /// it, since lws 4.1.6 reports 1012 to a client as 1002.
    public static let clusterDataLostReason = "cluster data lost"
}
