import RollcallCore

/// Subscriptions across key groups (docs/cluster.md, "User status across nodes"): a
/// subscription is kept on both sides, the subscriber's (`sub:`, `subx:`, its group's
/// `subexp`) and the target's (`subr:`, who to tell, with `maxSubscribersPerUser`). With one
/// key group both are in one slot and one script does it all (`status.subscribe`). With more
/// the target's side is written first, on its slot (`status.admit`, one per key group of the
/// targets, where the target's limit is checked with the add), then the subscriber's
/// (`status.subscribeAdmitted`); a subscriber leaves the target's side of another group after
/// an unsubscribe or a cap eviction (`status.dropSubscriber`, retried at each reaper tick
/// until Redis answers). Should the second step not run (Redis unreachable, the node gone),
/// the target's side expires with the subscription's duration.
extension ClusterUserStatus {
    /// Subscribes `me` to `targets` (never `me`) for `durationMs`: `use` gets the outcome per
    /// target in order and the subscriptions the cap dropped; `failed` the store's failure.
    func subscribe(_ me: Name, to targets: [Name], durationMs: Int64, failed: @escaping (BrokerError) -> Void,
                   then use: @escaping (UserStatusScripts.Subscribed) -> Void) {
        let limits = configuration.userStatus
        guard keys.groups.count > 1 else {
            let command = UserStatusScripts.subscribe(keys: keys, subscriber: me, durationMs: durationMs,
                                                      maxSubscriptions: limits.maxSubscriptionsPerUser,
                                                      maxSubscribers: limits.maxSubscribersPerUser, targets: targets)
            callScript(command, failed: failed) { [self] answer in use(UserStatusScripts.Subscribed(unwrapped(answer))) }
            return
        }
        let byGroup = UsersByGroup(targets, groupOf: keys.userGroup)
        let admits = byGroup.groups.map {
            UserStatusScripts.admit(keys: keys, subscriber: me, durationMs: durationMs, maxSubscribers: limits.maxSubscribersPerUser,
                                    targets: $0.users)
        }
        store.call(admits) { [self] result in
            let replies: [StoreReply]
            switch result {
            case .failure(let failure): return failed(failure.brokerError)
            case .success(let answered): replies = answered
            }
            if let error = replies.first(where: { if case .error = $0 { true } else { false } }) {
                return failed(ClusterPresence.unexpected(error))
            }
            let admitted = byGroup.merged(replies.map { UserStatusScripts.Admitted(unwrapped($0)).outcomes }) { _, outcome in
                outcome ?? (admitted: false, record: nil)
            }
            let taken = zip(targets, admitted).filter { $0.1.admitted }.map(\.0)
            let command = UserStatusScripts.subscribeAdmitted(keys: keys, subscriber: me, durationMs: durationMs,
                                                              maxSubscriptions: limits.maxSubscriptionsPerUser, targets: taken)
            callScript(command, failed: failed) { [self] answer in
                let mine = UserStatusScripts.Subscribed(unwrapped(answer))
                var codes = mine.outcomes.makeIterator()
                let outcomes = admitted.map { target -> (outcome: UserStatusScripts.Subscribed.Outcome, record: UserStatusRecord?) in
                    guard target.admitted else { return (.targetSubscriberLimit, nil) }
                    return (codes.next()?.outcome ?? .renewed, target.record)
                }
                dropSubscriber(me, from: mine.evicted)
                use(UserStatusScripts.Subscribed(outcomes: outcomes, evicted: mine.evicted))
            }
        }
    }

    /// `me` no longer subscribes to `targets`: it leaves the subscribers of those in other key
    /// groups than its own (its own group's script did the rest). `then` runs once Redis
    /// answered (or the drops were queued to be sent again): an unsubscribe answers then, so
    /// the client's next step (another user's subscribe to a full target) finds the room.
    func dropSubscriber(_ me: Name, from targets: [Name], then: (() -> Void)? = nil) {
        let mine = keys.userGroup(me)
        let others = targets.filter { keys.userGroup($0) != mine }
        sendDrops(UsersByGroup(others, groupOf: keys.userGroup).groups.map {
            UserStatusScripts.dropSubscriber(keys: keys, subscriber: me, targets: $0.users)
        }, then: then)
    }

    /// Runs `status.dropSubscriber` commands; those Redis did not answer are sent again at the
    /// next reaper tick (the script is idempotent). `then` runs after the answer.
    func sendDrops(_ commands: [StoreCommand], then: (() -> Void)? = nil) {
        guard !commands.isEmpty else {
            then?()
            return
        }
        store.call(commands) { [self] result in
            if case .failure = result { unansweredDrops += commands }
            then?()
        }
    }
}
