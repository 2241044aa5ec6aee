import RollcallProtocol

// The user-status ops' arguments (PROTOCOL §6), decoded and validated from a request frame
// before any state is read. Plain values, independent of sessions.

/// A parsed `userIds` argument: valid ids (deduplicated, in request order) and the invalid
/// ones as `failed` entries (`INVALID_ARGUMENT`); more than `limit` ids is `TOO_MANY_USERS`.
package struct UserIdBatch: Sendable {
    package var valid: [Name] = []
    package var failed: [JSON] = []
    package var isEmpty: Bool { valid.isEmpty && failed.isEmpty }

    init() {}

    init(_ request: Request, required: Bool, limit: Int) throws(BrokerError) {
        guard let raw = try request.optionalStringArray("userIds") else {
            if required { throw BrokerError(.invalidRequest, "missing userIds") }
            return
        }
        guard raw.count <= limit else {
            throw BrokerError(.tooManyUsers, "at most \(limit) userIds per call")
        }
        var seen = Set<Name>()
        for string in raw {
            if let name = Name(string) {
                if seen.insert(name).inserted { valid.append(name) }
            } else {
                failed.append(UserStatusEngine.failure(string, .invalidArgument))
            }
        }
    }
}

/// `setCustomStatus {customStatus: string | null}` (its length is checked by the engine).
package struct SetCustomStatusRequest: Sendable {
    /// nil: clear.
    package let customStatus: String?

    init(_ request: Request) throws(BrokerError) {
        guard request.arguments["customStatus"] != nil else {
            throw BrokerError(.invalidRequest, "missing customStatus (a string, or null to clear)")
        }
        customStatus = try request.optionalString("customStatus")
    }
}

/// `getUserStatus {userIds ≤ 500}`.
package struct GetUserStatusRequest: Sendable {
    package var userIds: UserIdBatch

    init(_ request: Request) throws(BrokerError) {
        userIds = try UserIdBatch(request, required: true, limit: StatusLimits.getUserStatusIds)
    }
}

/// `subscribeUserStatus {userIds ≤ 100, duration?}`.
package struct SubscribeUserStatusRequest: Sendable {
    package var userIds: UserIdBatch
    package let durationSeconds: Double

    init(_ request: Request) throws(BrokerError) {
        userIds = try UserIdBatch(request, required: true, limit: StatusLimits.subscribeIds)
        durationSeconds = try request.optionalNumber("duration") ?? StatusLimits.defaultDurationSeconds
        guard StatusLimits.durationSeconds.contains(durationSeconds) else {
            throw BrokerError(.invalidArgument, "duration must be 60...2592000 seconds")
        }
    }
}

/// `unsubscribeUserStatus {userIds? ≤ 100}` (absent or empty: all).
package struct UnsubscribeUserStatusRequest: Sendable {
    package let userIds: UserIdBatch

    init(_ request: Request) throws(BrokerError) {
        userIds = try UserIdBatch(request, required: false, limit: StatusLimits.unsubscribeIds)
    }
}

/// `getSubscriptions {userIds? ≤ 200, page?, pageSize? 1..200}`. The `page` cursor is
/// decoded by the engine, only when no `userIds` are given (it pages the whole list).
package struct GetSubscriptionsRequest: Sendable {
    package let userIds: UserIdBatch
    package let pageSize: Int
    package let page: String?

    init(_ request: Request) throws(BrokerError) {
        userIds = try UserIdBatch(request, required: false, limit: StatusLimits.getSubscriptionsIds)
        pageSize = try request.optionalInteger("pageSize", in: StatusLimits.pageSizes) ?? StatusLimits.defaultPageSize
        page = try request.optionalString("page")
    }
}
