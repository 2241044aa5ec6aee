import RollcallCore
import RollcallProtocol

/// User status in cluster mode (PROTOCOL §6 and §9): the ops of ``UserStatusEngine`` with
/// records, subscriptions and custom statuses in Redis (``UserStatusScripts``), so every node
/// answers as one broker would. The rules are the one-node engine's; only the per-user rates
/// (`customStatusPerSecond`, `queryRate`) are counted on each node, as §9 allows.
///
/// Events travel through per-user inboxes (`P{<g>}uu:<n>:<user>`, in the user's key group): a
/// script that changes a record answers it with the user's live subscribers, and the node that
/// ran it publishes it to the inbox of the user and of each subscriber; each node hears the
/// inboxes of the users it has sessions of and hands the event to those sessions, dropping a
/// record of a version that inbox already brought (docs/cluster.md, "Delivery").
final class ClusterUserStatus {
    typealias Completion = ClusterPresence.Completion

    let configuration: Configuration
    let keys: ClusterKeys
    let clock: BrokerClock
    let outbox: Outbox
    let directory: SessionDirectory
    unowned let store: any StoreCaller
    /// The broker, for its counters (``BrokerMetrics/clusterCatchUpsLost``).
    unowned let broker: Broker

    var customStatusBuckets: [Name: TokenBucket] = [:]
    var queryBuckets: [Name: TokenBucket] = [:]
    /// Users whose inbox this node hears (it has sessions of them), by inbox channel bytes.
    var inboxes: [[UInt8]: Name] = [:]
    /// Per heard inbox, the newest record version it brought of each user (the user's own
    /// and its targets'): an older or repeated one is dropped (``deliver(channel:payload:)``).
    var inboxVersions: [[UInt8]: [String: Int64]] = [:]
    /// Session number → the catch-up event of a new login, sent right after its reply.
    var pendingCatchUp: [UInt64: [UInt8]] = [:]
    /// New logins whose reply has not been queued yet (their catch-up waits for it).
    var awaitingLoginReply: Set<UInt64> = []
    /// Session number → the record versions its catch-up brought, per user: the same ones,
    /// brought again by the inbox (published before the session heard it), are not sent twice.
    var catchUpVersions: [UInt64: [String: Int64]] = [:]
    /// Session number → while its catch-up reads are out, the record versions its user's inbox
    /// delivered to it meanwhile, per user (``resolveCatchUp(_:for:then:)``).
    var heardWhileCatchingUp: [UInt64: [String: Int64]] = [:]
    /// When the reaper's last tick was answered (wall ms): how far back a resync must look.
    var lastSweptAt: Timestamp?
    /// Per key group this node swept (and counted), its unexpired subscriptions then.
    var subscriptionsByGroup: [Int: Int] = [:]
    /// The cluster's user-status subscriptions not expired yet, as the scanner's sweeps last
    /// counted them (every reaper tick, `P{0}meta` `subs`): `rollcall_subscriptions` on a
    /// cluster node.
    var subscriptionsInCluster = 0
    /// `status.ended` commands Redis did not answer, sent again at the next reaper tick.
    var unansweredEnds: [StoreCommand] = []
    /// `status.dropSubscriber` commands Redis did not answer, sent again at the next reaper tick.
    var unansweredDrops: [StoreCommand] = []
    /// Catch-up reads (``resolve(_:attempt:then:)``) Redis did not answer, sent again at the
    /// next reaper tick.
    var unansweredCatchUps: [() -> Void] = []

    /// The user-status engine of `broker`'s node, on the Redis keys `keys`.
    init(of broker: Broker, keys: ClusterKeys) {
        (configuration, clock, outbox, directory) = (broker.configuration, broker.clock, broker.outbox, broker.directory)
        self.keys = keys
        store = broker
        self.broker = broker
    }

    // MARK: - setCustomStatus

    /// `setCustomStatus {customStatus: string | null}` → `{status: record}`.
    func setCustomStatus(_ request: SetCustomStatusRequest, from session: Session, then done: @escaping Completion) throws(BrokerError) {
        let value = request.customStatus
        if let value, value.utf8.count > configuration.userStatus.customStatusMaxBytes {
            throw BrokerError(.customStatusTooLong, "customStatus is longer than \(configuration.userStatus.customStatusMaxBytes) bytes")
        }
        let perSecond = configuration.userStatus.customStatusPerSecond
        try take(from: &customStatusBuckets, session.userId, capacity: max(1, perSecond), perSecond: perSecond, what: "setCustomStatus")
        let command = UserStatusScripts.setCustomStatus(keys: keys, user: session.userId, session: session.sessionId,
                                                        customStatus: value, ttlMs: ttlMs)
        store.call([command]) { [self] result in
            done(result.map { replies in
                let record = UserStatusScripts.record(unwrapped(replies.first ?? .null)) ?? .neverSeen(session.userId)
                return ClusterPresence.Answer(result: .object(["status": record.json]))
            }.mapError(\.brokerError))
        }
    }

    // MARK: - getUserStatus

    /// `getUserStatus {userIds ≤ 500}` → `{statuses, failed}`; asking only about oneself is free.
    func getUserStatus(_ request: GetUserStatusRequest, from session: Session, then done: @escaping Completion) throws(BrokerError) {
        let batch = request.userIds
        if batch.valid.contains(where: { $0 != session.userId }) { try takeQueryToken(session.userId) }
        records(of: batch.valid) { result in
            done(result.map { records in
                ClusterPresence.Answer(result: .object([
                    "statuses": .array(records.map(\.json)), "failed": .array(batch.failed),
                ]))
            })
        }
    }

    // MARK: - subscribeUserStatus

    /// `subscribeUserStatus {userIds ≤ 100, duration?}` → `{statuses, failed}`; the
    /// `subscriptions` event goes to the user's other sessions on every node (all of them
    /// when the cap dropped subscriptions).
    func subscribe(_ request: SubscribeUserStatusRequest, from session: Session, then done: @escaping Completion) throws(BrokerError) {
        let batch = request.userIds
        let me = session.userId
        try takeQueryToken(me)
        let targets = batch.valid.filter { $0 != me }
        subscribe(me, to: targets, durationMs: request.durationSeconds.milliseconds, failed: { done(.failure($0)) }) { [self] reply in
            var outcomes = reply.outcomes.makeIterator()
            var failed = batch.failed
            var statuses: [JSON] = []
            var added: [Name] = []
            for target in batch.valid {
                if target == me {
                    failed.append(UserStatusEngine.failure(target.string, .cannotSubscribeSelf))
                    continue
                }
                guard let (outcome, record) = outcomes.next() else { break }
                switch outcome {
                case .targetSubscriberLimit:
                    failed.append(UserStatusEngine.failure(target.string, .targetSubscriberLimit))
                case .added, .renewed:
                    if outcome == .added { added.append(target) }
                    statuses.append((record ?? .neverSeen(target)).json)
                }
            }
            let evicted = reply.evicted
            if evicted.isEmpty {
                if !added.isEmpty { tell(me, StatusEvents.subscriptions(added: added, removed: []), except: session.sessionId) }
            } else {
                // A subscription made and dropped within this call was never visible to anyone.
                let evictedSet = Set(evicted)
                let addedSet = Set(added)
                tell(me, StatusEvents.subscriptions(added: added.filter { !evictedSet.contains($0) },
                                                    removed: evicted.filter { !addedSet.contains($0) }), except: "")
            }
            done(.success(ClusterPresence.Answer(result: .object(["statuses": .array(statuses), "failed": .array(failed)]))))
        }
    }

    // MARK: - unsubscribeUserStatus

    /// `unsubscribeUserStatus {userIds? ≤ 100}` → `{failed}`; absent or empty: all.
    func unsubscribe(_ request: UnsubscribeUserStatusRequest, from session: Session, then done: @escaping Completion) throws(BrokerError) {
        let batch = request.userIds
        let me = session.userId
        try takeQueryToken(me)
        let command = UserStatusScripts.unsubscribe(keys: keys, subscriber: me, all: batch.isEmpty, targets: batch.valid)
        callScript(command, failed: { done(.failure($0)) }) { [self] reply in
            var removed = UserStatusScripts.removedTargets(reply)
            if batch.isEmpty { removed.sort() }
            if !removed.isEmpty { tell(me, StatusEvents.subscriptions(added: [], removed: removed), except: session.sessionId) }
            // Answered once the targets of other key groups dropped `me` too.
            dropSubscriber(me, from: removed) {
                done(.success(ClusterPresence.Answer(result: .object(["failed": .array(batch.failed)]))))
            }
        }
    }

    // MARK: - getSubscriptions

    /// `getSubscriptions {userIds? ≤ 200, page?, pageSize? 1..200}` →
    /// `{subscriptions: [{userId, expiresAt, status}], nextPage, failed}`, paged in byte order
    /// of userId with the one-node cursor (valid on every node).
    func getSubscriptions(_ request: GetSubscriptionsRequest, from session: Session, then done: @escaping Completion) throws(BrokerError) {
        let batch = request.userIds
        var after: Name?
        if batch.isEmpty, let cursor = request.page {
            guard let decoded = PageCursor.decode(cursor) else {
                throw BrokerError(.invalidArgument, "page must be a nextPage value from an earlier reply")
            }
            after = decoded
        }
        let pageSize = request.pageSize
        store.call([UserStatusScripts.subscriptions(keys: keys, subscriber: session.userId)]) { [self] result in
            switch result {
            case .failure(let failure):
                done(.failure(failure.brokerError))
            case .success(let replies):
                let mine = UserStatusScripts.subscriptionExpiries(replies.first ?? .null)
                var listed: [Name]
                var nextPage: JSON = .null
                if !batch.isEmpty {
                    listed = batch.valid.filter { mine[$0] != nil }
                } else {
                    let all = mine.keys.sorted()
                    let start = after.map { PageCursor.firstIndex(after: $0, in: all) } ?? 0
                    let end = min(all.count, start + pageSize)
                    listed = start < end ? Array(all[start..<end]) : []
                    if end < all.count, let last = listed.last { nextPage = .string(PageCursor.encode(after: last)) }
                }
                records(of: listed) { result in
                    done(result.map { records in
                        let items: [JSON] = zip(listed, records).map { target, record in
                            .object([
                                "userId": .string(target.string), "expiresAt": .int(Int(mine[target] ?? 0)), "status": record.json,
                            ])
                        }
                        return ClusterPresence.Answer(result: .object([
                            "subscriptions": .array(items), "nextPage": nextPage, "failed": .array(batch.failed),
                        ]))
                    })
                }
            }
        }
    }

    // MARK: - Support

    /// The records of `users`, in order (never-seen users read `loggedOut`): one
    /// `status.records` per key group of the users (each on its group's slot), sent in one
    /// store call, merged back into the users' order.
    func records(of users: [Name], then done: @escaping (Result<[UserStatusRecord], BrokerError>) -> Void) {
        let byGroup = UsersByGroup(users, groupOf: keys.userGroup)
        guard !byGroup.groups.isEmpty else { return done(.success([])) }
        let commands = byGroup.groups.map { UserStatusScripts.records(keys: keys, users: $0.users) }
        store.call(commands) { [self] result in
            switch result {
            case .failure(let failure):
                done(.failure(failure.brokerError))
            case .success(let replies):
                if let error = replies.first(where: { if case .error = $0 { true } else { false } }) {
                    return done(.failure(ClusterPresence.unexpected(error)))
                }
                let perGroup = replies.map { unwrapped($0).elements ?? [] }
                done(.success(byGroup.merged(perGroup) { user, element in
                    element.flatMap(UserStatusScripts.record) ?? .neverSeen(user)
                }))
            }
        }
    }

    /// Runs one script: `use` gets its reply; `failed` gets the store's failure, or Redis' error
    /// reply as `INTERNAL`.
    func callScript(_ command: StoreCommand, failed: @escaping (BrokerError) -> Void, then use: @escaping (StoreReply) -> Void) {
        store.call([command]) { result in
            switch result {
            case .failure(let failure):
                failed(failure.brokerError)
            case .success(let replies):
                let reply = replies.first ?? .null
                if case .error = reply { return failed(ClusterPresence.unexpected(reply)) }
                use(reply)
            }
        }
    }

    /// The answer of a script that can change records, `{result, announced changes}`: publishes
    /// each change to the inboxes of its user and of the subscribers the script read, right
    /// after the answer (routable publishes, ``publish(_:)``), and returns the result (the
    /// scripts wrote the changes' webhook events themselves, ``WebhookStreamScripts``). Every
    /// reply of such a script goes through here once.
    func unwrapped(_ reply: StoreReply) -> StoreReply {
        let changed = UserStatusScripts.Changed(reply)
        publish(changed.announced)
        return changed.result
    }

    /// `customStatusTtlSeconds` in ms.
    var ttlMs: Int64 { configuration.userStatus.customStatusTtlSeconds.milliseconds }


    private func takeQueryToken(_ userId: Name) throws(BrokerError) {
        let rate = configuration.userStatus.queryRate
        try take(from: &queryBuckets, userId, capacity: Double(rate.calls), perSecond: Double(rate.calls) / rate.perSeconds,
                 what: "user status queries")
    }

    private func take(from buckets: inout [Name: TokenBucket], _ userId: Name, capacity: Double, perSecond: Double,
                      what: String) throws(BrokerError) {
        let now = clock.monotonic
        var bucket = buckets[userId] ?? TokenBucket(capacity: capacity, now: now)
        let outcome = bucket.take(now: now, capacity: capacity, ratePerSecond: perSecond)
        buckets[userId] = bucket
        if case .failure(let retry) = outcome { throw .rateLimited(what, retry) }
    }
}
