import RollcallProtocol

/// IM-style user status across devices (PROTOCOL §6): status records, custom status,
/// subscriptions and their events. Owned by ``Broker``.
///
/// Rules this engine settles where the protocol is silent:
/// - a user never seen reads `loggedOut`, `customStatus: null`, `platforms: []`, times `0`;
/// - `lastUpdateTime` moves whenever status, custom status or platforms change;
/// - `clearCustomStatusOnOffline` applies when the last session ends (`offline` or `loggedOut`);
/// - setting the current custom status again changes nothing, not even its expiry;
/// - catch-up compares with the end of the user's most recent session (any device); a user
///   whose session never ended gets no catch-up; a resumed session gets the changes of the
///   longest possible hold window;
/// - at start, users stored as `online` (the broker died under them) read `offline` as of
///   the store's last-alive time; expired custom statuses and subscriptions are dropped.
package final class UserStatusEngine {
    let configuration: Configuration
    let clock: BrokerClock
    let outbox: Outbox
    let directory: SessionDirectory
    let store: any StatusStore

    /// Durable records of every user ever seen.
    var users: [Name: StoredUserStatus] = [:]
    /// Platforms last announced for each user with sessions, one bit per ``Platform`` case
    /// (a byte per user, where an array per user cost ~90 B in the idle benchmark).
    var announcedPlatforms: [Name: UInt8] = [:]
    /// Every subscription.
    var book = SubscriptionBook()
    var customStatusExpiries = TimerQueue<Name>()
    var customStatusBuckets: [Name: TokenBucket] = [:]
    var queryBuckets: [Name: TokenBucket] = [:]
    /// Session number → the end of the user's previous session, until the catch-up is sent.
    var pendingCatchUp: [UInt64: Timestamp] = [:]

    /// The error of the last ``shutdown()`` flush, if it failed (for the executable to report).
    private(set) var lastFlushError: StatusStoreError?

    init(configuration: Configuration, clock: BrokerClock, outbox: Outbox, directory: SessionDirectory,
         store: any StatusStore) {
        self.configuration = configuration
        self.clock = clock
        self.outbox = outbox
        self.directory = directory
        self.store = store
        restore(store.load())
    }

    // MARK: - Reading

    /// The user's current record (never-seen users read `loggedOut` with zero times).
    public func record(of userId: Name) -> UserStatusRecord {
        let stored = users[userId] ?? StoredUserStatus(userId: userId, status: .loggedOut)
        return UserStatusRecord(stored: stored, platforms: platforms(of: userId))
    }

    /// Number of subscriptions held by all users.
    package var subscriptionCount: Int { book.count }

    /// The platforms of the user's sessions, sorted.
    func platforms(of userId: Name) -> [Platform] {
        let set = platformSet(of: userId)
        return Platform.allCases.filter { set & $0.bit != 0 }.sorted()
    }

    /// The same as a set of ``Platform/bit``s.
    func platformSet(of userId: Name) -> UInt8 {
        directory.sessions(of: userId).reduce(0) { $0 | $1.platform.bit }
    }

    // MARK: - Session hooks

    /// Throws `CUSTOM_STATUS_TOO_LONG` when `customStatus` is over the limit.
    func validateCustomStatus(_ customStatus: String) throws(BrokerError) {
        if customStatus.utf8.count > configuration.userStatus.customStatusMaxBytes {
            throw BrokerError(.customStatusTooLong, "customStatus is longer than \(configuration.userStatus.customStatusMaxBytes) bytes")
        }
    }

    /// A new session logged in (already in the directory); before the login reply.
    /// The user goes `online`, the login's custom status (if not empty) is set without
    /// counting against the rate, and platforms are recomputed; any change is announced to
    /// subscribers and to the user's other sessions.
    func sessionStarted(_ session: Session, customStatus: String?) {
        let userId = session.userId
        let now = clock.now
        var user = users[userId] ?? StoredUserStatus(userId: userId, status: .loggedOut)
        if let ended = user.lastSessionEndedAt { pendingCatchUp[session.number] = ended }
        var changed = false
        if user.status != .online {
            user.status = .online
            user.lastOnlineStatusUpdateTime = now
            changed = true
        }
        if let customStatus, !customStatus.isEmpty, !sameText(customStatus, user.customStatus) {
            setCustomStatus(customStatus, on: &user, now: now)
            changed = true
        }
        if refreshPlatforms(of: userId) { changed = true }
        commit(user, changed: changed, now: now, except: session)
    }

    /// A held session was resumed; before the login reply. Its platform never left the
    /// record, so only a non-empty login custom status can change anything.
    ///
    /// Events to the session were dropped while it was held, so it gets a catch-up too. The
    /// engine is not told when the hold began; the window is the longest a hold can last
    /// (a superset of what was missed: records are whole states, a repeat is harmless).
    package func sessionResumed(_ session: Session, customStatus: String?) {
        let longestHold = max(300, configuration.presence.timeoutSeconds).milliseconds
        pendingCatchUp[session.number] = clock.now - longestHold
        guard let customStatus, !customStatus.isEmpty,
              var user = users[session.userId], !sameText(customStatus, user.customStatus) else { return }
        let now = clock.now
        setCustomStatus(customStatus, on: &user, now: now)
        commit(user, changed: true, now: now, except: session)
    }

    /// After the login reply was queued: the catch-up event, one `userStatus` with every
    /// subscribed target whose `lastUpdateTime` is after the end of the user's previous session.
    func sessionLoggedIn(_ session: Session) {
        guard let since = pendingCatchUp.removeValue(forKey: session.number) else { return }
        let targets = book.subscriptions(of: session.userId).keys
            .filter { (users[$0]?.lastUpdateTime ?? 0) > since }
            .sorted()
        guard !targets.isEmpty else { return }
        outbox.send(StatusEvents.userStatus(targets.map(record(of:))), to: session)
    }

    /// The session ended for good (already removed from the directory). If it was the
    /// user's last: `loggedOut` after logout, else `offline`; otherwise platforms may change.
    package func sessionEnded(_ session: Session, _ how: SessionEnd) {
        pendingCatchUp[session.number] = nil
        let userId = session.userId
        let now = clock.now
        var user = users[userId] ?? StoredUserStatus(userId: userId, status: .loggedOut)
        user.lastSessionEndedAt = now
        var changed = false
        if directory.sessions(of: userId).isEmpty {
            announcedPlatforms[userId] = nil
            let status: OnlineStatus = how == .logout ? .loggedOut : .offline
            if user.status != status {
                user.status = status
                user.lastOnlineStatusUpdateTime = now
                changed = true
            }
            if configuration.userStatus.clearCustomStatusOnOffline, user.customStatus != nil {
                setCustomStatus(nil, on: &user, now: now)
                changed = true
            }
        } else if refreshPlatforms(of: userId) {
            changed = true
        }
        commit(user, changed: changed, now: now, except: nil)
    }

    // MARK: - Timers

    /// Earliest expiry due (subscriptions and custom statuses), in monotonic milliseconds.
    var nextDeadline: Timestamp? {
        [book.nextExpiry(), customStatusExpiries.nextDeadline()].compactMap { $0 }.min()
    }

    /// Runs due expiries: subscriptions lapse silently; an expired custom status is a change
    /// that subscribers and all the user's sessions hear about.
    func fireDueTimers() {
        let now = clock.now
        for key in book.removeExpired(monotonicNow: clock.monotonic) {
            store.write(.deleteSubscription(subscriber: key.subscriber, target: key.target))
        }
        // The timers are monotonic: a wall-clock step after they were armed moves none of them.
        for userId in customStatusExpiries.popDue(now: clock.monotonic) {
            guard var user = users[userId], user.customStatusExpiresAt != nil else { continue }
            setCustomStatus(nil, on: &user, now: now)
            commit(user, changed: true, now: now, except: nil)
        }
    }

    /// Broker shutdown (after every session ended): flush durable data synchronously.
    func shutdown() {
        do throws(StatusStoreError) {
            try store.flush()
            lastFlushError = nil
        } catch {
            lastFlushError = error
        }
    }

    // MARK: - Changing records

    /// Sets (or with nil clears) the custom status, its time and its expiry timer.
    func setCustomStatus(_ value: String?, on user: inout StoredUserStatus, now: Timestamp) {
        user.customStatus = value
        user.lastCustomStatusUpdateTime = now
        if value != nil {
            let expiresAt = now + configuration.userStatus.customStatusTtlSeconds.milliseconds
            user.customStatusExpiresAt = expiresAt
            customStatusExpiries.schedule(user.userId, at: clock.monotonicDeadline(forWallTime: expiresAt))
        } else {
            user.customStatusExpiresAt = nil
            customStatusExpiries.cancel(user.userId)
        }
    }

    /// Recomputes the user's platforms; true when they differ from the last announced.
    private func refreshPlatforms(of userId: Name) -> Bool {
        let current = platformSet(of: userId)
        guard (announcedPlatforms[userId] ?? 0) != current else { return false }
        announcedPlatforms[userId] = current == 0 ? nil : current
        return true
    }

    /// Stores `user`, persists it, and when `changed` stamps `lastUpdateTime` and sends one
    /// `userStatus` event (encoded once) to every session of every subscriber and to the
    /// user's own sessions except `except`.
    func commit(_ user: StoredUserStatus, changed: Bool, now: Timestamp, except: Session?) {
        var user = user
        if changed {
            user.lastUpdateTime = now
            user.version += 1
        }
        users[user.userId] = user
        store.write(.upsertUser(user))
        guard changed else { return }
        let record = UserStatusRecord(stored: user, platforms: platforms(of: user.userId))
        let bytes = StatusEvents.userStatus([record])
        if outbox.notifiesUserStatus { outbox.notifyBackend(.userStatus, BackendEvents.userStatus(record, version: user.version)) }
        outbox.fanOut {
            for subscriber in book.subscribers(of: user.userId) {
                for session in directory.sessions(of: subscriber) {
                    outbox.send(bytes, to: session)
                }
            }
            for session in directory.sessions(of: user.userId) where session !== except {
                outbox.send(bytes, to: session)
            }
        }
    }

    // MARK: - Restore

    /// Loads the durable state: online users become offline as of the store's last-alive
    /// time, expired custom statuses and subscriptions are dropped (and the drop persisted).
    private func restore(_ snapshot: StatusSnapshot) {
        let now = clock.now
        for stored in snapshot.users {
            var user = stored
            var rewritten = false
            if user.status == .online {
                let wentOffline = max(snapshot.lastAliveAt ?? user.lastUpdateTime, user.lastOnlineStatusUpdateTime)
                user.status = .offline
                user.lastOnlineStatusUpdateTime = wentOffline
                user.lastUpdateTime = max(user.lastUpdateTime, wentOffline)
                user.lastSessionEndedAt = max(user.lastSessionEndedAt ?? wentOffline, wentOffline)
                if configuration.userStatus.clearCustomStatusOnOffline, user.customStatus != nil {
                    user.customStatus = nil
                    user.customStatusExpiresAt = nil
                    user.lastCustomStatusUpdateTime = wentOffline
                }
                rewritten = true
            }
            if let expiresAt = user.customStatusExpiresAt {
                if expiresAt <= now {
                    user.customStatus = nil
                    user.customStatusExpiresAt = nil
                    user.lastCustomStatusUpdateTime = expiresAt
                    user.lastUpdateTime = max(user.lastUpdateTime, expiresAt)
                    rewritten = true
                } else {
                    customStatusExpiries.schedule(user.userId, at: clock.monotonicDeadline(forWallTime: expiresAt))
                }
            }
            users[user.userId] = user
            if rewritten { store.write(.upsertUser(user)) }
        }
        let subscriptions = snapshot.subscriptions.sorted {
            ($0.createdAt, $0.subscriber, $0.target) < ($1.createdAt, $1.subscriber, $1.target)
        }
        for subscription in subscriptions {
            if subscription.expiresAt <= now || subscription.subscriber == subscription.target {
                store.write(.deleteSubscription(subscriber: subscription.subscriber, target: subscription.target))
            } else if book.entry(subscription.subscriber, subscription.target) == nil {
                book.add(subscription.subscriber, subscription.target,
                         createdAt: subscription.createdAt, expiresAt: subscription.expiresAt,
                         deadline: clock.monotonicDeadline(forWallTime: subscription.expiresAt))
            }
        }
    }
}

/// Byte-exact equality of an optional text (no Unicode canonical equivalence).
func sameText(_ a: String?, _ b: String?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case (let x?, let y?): return x.utf8.elementsEqual(y.utf8)
    default: return false
    }
}
