import RollcallProtocol

/// Batch limits of the user-status ops (PROTOCOL §6).
package enum StatusLimits {
    static let getUserStatusIds = 500
    static let subscribeIds = 100
    static let unsubscribeIds = 100
    static let getSubscriptionsIds = 200
    static let durationSeconds: ClosedRange<Double> = 60...2_592_000
    static let defaultDurationSeconds = 86_400.0
    static let pageSizes: ClosedRange<Int> = 1...200
    static let defaultPageSize = 100
}

extension UserStatusEngine {
    // MARK: - setCustomStatus

    /// `setCustomStatus {customStatus: string | null}` → `{status: record}`.
    func setCustomStatus(_ request: SetCustomStatusRequest, from session: Session) throws(BrokerError) -> JSON {
        let value = request.customStatus
        if let value { try validateCustomStatus(value) }
        let userId = session.userId
        let now = clock.now
        let perSecond = configuration.userStatus.customStatusPerSecond
        try take(from: &customStatusBuckets, userId, capacity: max(1, perSecond), perSecond: perSecond,
                 now: clock.monotonic, what: "setCustomStatus")
        let wanted = (value?.isEmpty ?? true) ? nil : value
        var user = users[userId] ?? StoredUserStatus(userId: userId, status: .online)
        if !sameText(wanted, user.customStatus) {
            setCustomStatus(wanted, on: &user, now: now)
            commit(user, changed: true, now: now, except: session)
        }
        return .object(["status": record(of: userId).json])
    }

    // MARK: - getUserStatus

    /// `getUserStatus {userIds ≤ 500}` → `{statuses, failed}`. Asking only about oneself is
    /// free; asking about anyone else takes one `queryRate` token.
    func getUserStatus(_ request: GetUserStatusRequest, from session: Session) throws(BrokerError) -> JSON {
        let batch = request.userIds
        if batch.valid.contains(where: { $0 != session.userId }) {
            try takeQueryToken(session.userId)
        }
        return statuses(request)
    }

    /// `{statuses, failed}` for the batch, with no rate limit: `getUserStatus` once admitted,
    /// and the server API's (PROTOCOL §10).
    func statuses(_ request: GetUserStatusRequest) -> JSON {
        let batch = request.userIds
        return .object([
            "statuses": .array(batch.valid.map { record(of: $0).json }),
            "failed": .array(batch.failed),
        ])
    }

    // MARK: - subscribeUserStatus

    /// `subscribeUserStatus {userIds ≤ 100, duration?}` → `{statuses, failed}`.
    func subscribe(_ request: SubscribeUserStatusRequest, from session: Session) throws(BrokerError) -> JSON {
        let batch = request.userIds
        let duration = request.durationSeconds
        let me = session.userId
        try takeQueryToken(me)
        let now = clock.now
        let expiresAt = now + duration.milliseconds
        let deadline = clock.monotonic + duration.milliseconds
        let limits = configuration.userStatus
        var failed = batch.failed
        var statuses: [JSON] = []
        var added: [Name] = []
        for target in batch.valid {
            if target == me {
                failed.append(Self.failure(target.string, .cannotSubscribeSelf))
            } else if let existing = book.entry(me, target) {
                book.renew(me, target, expiresAt: expiresAt, deadline: deadline)
                store.write(.upsertSubscription(StoredSubscription(
                    subscriber: me, target: target, createdAt: existing.createdAt, expiresAt: expiresAt)))
                statuses.append(record(of: target).json)
            } else if book.subscriberCount(of: target) >= limits.maxSubscribersPerUser {
                failed.append(Self.failure(target.string, .targetSubscriberLimit))
            } else {
                let createdAt = book.creationTime(for: me, now: now)
                book.add(me, target, createdAt: createdAt, expiresAt: expiresAt, deadline: deadline)
                store.write(.upsertSubscription(StoredSubscription(
                    subscriber: me, target: target, createdAt: createdAt, expiresAt: expiresAt)))
                added.append(target)
                statuses.append(record(of: target).json)
            }
        }
        var evicted: [Name] = []
        while book.subscriptionCount(of: me) > limits.maxSubscriptionsPerUser, let target = book.removeEarliest(of: me) {
            store.write(.deleteSubscription(subscriber: me, target: target))
            evicted.append(target)
        }
        if evicted.isEmpty {
            if !added.isEmpty { sendToOtherSessions(of: session, StatusEvents.subscriptions(added: added, removed: [])) }
        } else {
            // A subscription made and dropped within this call was never visible to anyone.
            let evictedSet = Set(evicted)
            let addedSet = Set(added)
            let bytes = StatusEvents.subscriptions(
                added: added.filter { !evictedSet.contains($0) },
                removed: evicted.filter { !addedSet.contains($0) })
            for each in directory.sessions(of: me) { outbox.send(bytes, to: each) }
        }
        return .object(["statuses": .array(statuses), "failed": .array(failed)])
    }

    // MARK: - unsubscribeUserStatus

    /// `unsubscribeUserStatus {userIds? ≤ 100}` → `{failed}`; absent or empty: all.
    func unsubscribe(_ request: UnsubscribeUserStatusRequest, from session: Session) throws(BrokerError) -> JSON {
        let batch = request.userIds
        let me = session.userId
        try takeQueryToken(me)
        let targets = batch.isEmpty ? book.subscriptions(of: me).keys.sorted() : batch.valid
        var removed: [Name] = []
        for target in targets where book.remove(me, target) {
            store.write(.deleteSubscription(subscriber: me, target: target))
            removed.append(target)
        }
        if !removed.isEmpty { sendToOtherSessions(of: session, StatusEvents.subscriptions(added: [], removed: removed)) }
        return .object(["failed": .array(batch.failed)])
    }

    // MARK: - getSubscriptions

    /// `getSubscriptions {userIds? ≤ 200, page?, pageSize? 1..200}` →
    /// `{subscriptions: [{userId, expiresAt, status}], nextPage, failed}`.
    /// Without `userIds`, pages go in byte order of userId; `nextPage` is an opaque cursor.
    func getSubscriptions(_ request: GetSubscriptionsRequest, from session: Session) throws(BrokerError) -> JSON {
        let batch = request.userIds
        let pageSize = request.pageSize
        let cursor = request.page
        let me = session.userId
        let mine = book.subscriptions(of: me)
        var listed: [Name] = []
        var nextPage: JSON = .null
        if !batch.isEmpty {
            listed = batch.valid.filter { mine[$0] != nil }
        } else {
            let all = mine.keys.sorted()
            var start = 0
            if let cursor {
                guard let after = PageCursor.decode(cursor) else {
                    throw BrokerError(.invalidArgument, "page must be a nextPage value from an earlier reply")
                }
                start = PageCursor.firstIndex(after: after, in: all)
            }
            let end = min(all.count, start + pageSize)
            listed = Array(all[start..<end])
            if end < all.count, let last = listed.last { nextPage = .string(PageCursor.encode(after: last)) }
        }
        let items: [JSON] = listed.compactMap { target in
            guard let entry = mine[target] else { return nil }
            return .object([
                "userId": .string(target.string),
                "expiresAt": .int(Int(entry.expiresAt)),
                "status": record(of: target).json,
            ])
        }
        return .object(["subscriptions": .array(items), "nextPage": nextPage, "failed": .array(batch.failed)])
    }

    // MARK: - Helpers

    package static func failure(_ userId: String, _ code: ErrorCode) -> JSON {
        .object(["userId": .string(userId), "code": .string(code.rawValue)])
    }

    private func takeQueryToken(_ userId: Name) throws(BrokerError) {
        let rate = configuration.userStatus.queryRate
        try take(from: &queryBuckets, userId, capacity: Double(rate.calls), perSecond: Double(rate.calls) / rate.perSeconds,
                 now: clock.monotonic, what: "user status queries")
    }

    private func take(from buckets: inout [Name: TokenBucket], _ userId: Name, capacity: Double, perSecond: Double,
                      now: Timestamp, what: String) throws(BrokerError) {
        var bucket = buckets[userId] ?? TokenBucket(capacity: capacity, now: now)
        let outcome = bucket.take(now: now, capacity: capacity, ratePerSecond: perSecond)
        buckets[userId] = bucket
        if case .failure(let retry) = outcome { throw .rateLimited(what, retry) }
    }

    private func sendToOtherSessions(of session: Session, _ bytes: [UInt8]) {
        for other in directory.sessions(of: session.userId) where other !== session {
            outbox.send(bytes, to: other)
        }
    }
}
