import DequeModule

/// Every user-status subscription, indexed both ways, with expiry on a heap.
///
/// - subscriber → target → subscription (a user's list, O(1) add/renew/remove);
/// - target → subscribers (who to tell when a status changes, O(1) per subscriber);
/// - per subscriber, a creation-order queue for the `maxSubscriptionsPerUser` cap: removals
///   leave stale entries that are skipped (and compacted) later, so eviction is O(evicted);
/// - a ``TimerQueue`` of expiries: nothing is ever scanned.
package struct SubscriptionBook {
    /// One live subscription.
    package struct Entry: Equatable {
        var createdAt: Timestamp
        var expiresAt: Timestamp
        /// Unique per creation; tells a live creation-order entry from a stale one.
        var order: UInt64
    }

    private var bySubscriber: [Name: [Name: Entry]] = [:]
    private var bySubscriberOrder: [Name: Deque<(target: Name, order: UInt64)>] = [:]
    private var byTarget: [Name: Set<Name>] = [:]
    private var expiries = TimerQueue<SubscriptionKey>()
    private var nextOrder: UInt64 = 0
    /// Per subscriber with subscriptions, the latest creation time handed out.
    private var latestCreatedAt: [Name: Timestamp] = [:]

    /// Total subscriptions.
    private(set) var count = 0

    /// The subscriber's subscriptions by target.
    func subscriptions(of subscriber: Name) -> [Name: Entry] { bySubscriber[subscriber] ?? [:] }

    /// The subscription `(subscriber, target)`, if any.
    func entry(_ subscriber: Name, _ target: Name) -> Entry? { bySubscriber[subscriber]?[target] }

    /// Who follows `target`.
    func subscribers(of target: Name) -> Set<Name> { byTarget[target] ?? [] }

    /// Number of users following `target`.
    func subscriberCount(of target: Name) -> Int { byTarget[target]?.count ?? 0 }

    /// Number of users `subscriber` follows.
    func subscriptionCount(of subscriber: Name) -> Int { bySubscriber[subscriber]?.count ?? 0 }

    /// The creation time for a subscription `subscriber` makes at `now`: `now`, or 1 ms after
    /// their latest one, so that creation times are distinct per subscriber and the
    /// earliest-made order survives a restart (the store keeps only `createdAt`; ties would
    /// come back in byte order of target).
    func creationTime(for subscriber: Name, now: Timestamp) -> Timestamp {
        guard let latest = latestCreatedAt[subscriber] else { return now }
        return max(now, latest + 1)
    }

    /// Adds a new subscription (the caller checked it does not exist). `expiresAt` is wall
    /// time (shown and stored); `deadline` is when it lapses on the monotonic clock.
    mutating func add(_ subscriber: Name, _ target: Name, createdAt: Timestamp, expiresAt: Timestamp, deadline: Timestamp) {
        latestCreatedAt[subscriber] = max(latestCreatedAt[subscriber] ?? createdAt, createdAt)
        nextOrder += 1
        bySubscriber[subscriber, default: [:]][target] = Entry(createdAt: createdAt, expiresAt: expiresAt, order: nextOrder)
        bySubscriberOrder[subscriber, default: []].append((target, nextOrder))
        byTarget[target, default: []].insert(subscriber)
        expiries.schedule(SubscriptionKey(subscriber: subscriber, target: target), at: deadline)
        count += 1
    }

    /// Moves an existing subscription's expiry (wall `expiresAt`, monotonic `deadline`); its
    /// creation time and order stay.
    mutating func renew(_ subscriber: Name, _ target: Name, expiresAt: Timestamp, deadline: Timestamp) {
        guard bySubscriber[subscriber]?[target] != nil else { return }
        bySubscriber[subscriber]?[target]?.expiresAt = expiresAt
        expiries.schedule(SubscriptionKey(subscriber: subscriber, target: target), at: deadline)
    }

    /// Removes a subscription; returns false when there was none.
    @discardableResult
    mutating func remove(_ subscriber: Name, _ target: Name) -> Bool {
        guard bySubscriber[subscriber]?.removeValue(forKey: target) != nil else { return false }
        if bySubscriber[subscriber]?.isEmpty == true {
            bySubscriber[subscriber] = nil
            bySubscriberOrder[subscriber] = nil
            latestCreatedAt[subscriber] = nil
        } else {
            compactOrderIfMostlyStale(subscriber)
        }
        byTarget[target]?.remove(subscriber)
        if byTarget[target]?.isEmpty == true { byTarget[target] = nil }
        expiries.cancel(SubscriptionKey(subscriber: subscriber, target: target))
        count -= 1
        return true
    }

    /// Removes the subscriber's earliest-made subscription and returns its target.
    mutating func removeEarliest(of subscriber: Name) -> Name? {
        while let first = bySubscriberOrder[subscriber]?.first {
            bySubscriberOrder[subscriber]?.removeFirst()
            if bySubscriber[subscriber]?[first.target]?.order == first.order {
                remove(subscriber, first.target)
                return first.target
            }
        }
        return nil
    }

    /// Removes and returns every subscription whose monotonic deadline has come.
    mutating func removeExpired(monotonicNow: Timestamp) -> [SubscriptionKey] {
        let due = expiries.popDue(now: monotonicNow)
        for key in due {
            remove(key.subscriber, key.target)
        }
        return due
    }

    /// The earliest expiry, in monotonic milliseconds.
    mutating func nextExpiry() -> Timestamp? { expiries.nextDeadline() }

    private mutating func compactOrderIfMostlyStale(_ subscriber: Name) {
        guard let order = bySubscriberOrder[subscriber], let live = bySubscriber[subscriber],
              order.count > 64, order.count > live.count * 2 else { return }
        bySubscriberOrder[subscriber] = Deque(order.filter { live[$0.target]?.order == $0.order })
    }
}
