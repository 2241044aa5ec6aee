import RollcallCore

/// The user-status scripts (``UserStatusScripts``) as Swift calls: each function passes a
/// script's arguments by the names its parameter list gives them (`prefix` first), and each
/// reply type names the positions of its answer. Nowhere else on the
/// Swift side is a user-status script's argument or reply read by position.
extension UserStatusScripts {
    /// How a session that ended for good left (`status.ended`'s `how`).
    enum EndKind: String {
        /// `logout` or `disconnectUser`: `loggedOut` after the user's last session.
        case logout
        /// Any other end: `offline` after the user's last session.
        case closed
    }

    /// `status.started`: the user goes online with `session`; `customStatus` (nil: unchanged)
    /// lives `ttlMs`. Answers ``Changed`` whose result is the catch-up records.
    static func started(keys: ClusterKeys, user: Name, session: String, customStatus: String?, ttlMs: Int64) -> StoreCommand {
        let mine = keys.user(user)
        return started.command([
            "status": mine.status, "customExpiries": mine.customStatusExpiries, "prefix": keys.prefix, "groups": keys.groups.count,
            "hooks": keys.webhookHooks, "webhookStream": mine.group + "wh", "user": user.string, "session": session, "custom": customArgument(customStatus), "ttl": ttlMs,
        ])
    }

    /// `status.resumed`: as ``started(keys:user:session:customStatus:ttlMs:)`` for a resumed
    /// session; the catch-up covers the records changed in the last `windowMs`.
    static func resumed(keys: ClusterKeys, user: Name, session: String, customStatus: String?, ttlMs: Int64,
                        windowMs: Int64) -> StoreCommand {
        let mine = keys.user(user)
        return resumed.command([
            "status": mine.status, "customExpiries": mine.customStatusExpiries, "prefix": keys.prefix, "groups": keys.groups.count,
            "hooks": keys.webhookHooks, "webhookStream": mine.group + "wh", "user": user.string, "session": session, "custom": customArgument(customStatus), "ttl": ttlMs,
            "window": windowMs,
        ])
    }

    /// `status.ended`: `session` (already gone from Redis) ended `how`; `clearCustomStatus`
    /// is `userStatus.clearCustomStatusOnOffline`.
    static func ended(keys: ClusterKeys, user: Name, session: String, how: EndKind, clearCustomStatus: Bool) -> StoreCommand {
        let mine = keys.user(user)
        return ended.command([
            "status": mine.status, "customExpiries": mine.customStatusExpiries, "ending": mine.session(session).endingSessions,
            "prefix": keys.prefix, "groups": keys.groups.count, "hooks": keys.webhookHooks, "webhookStream": mine.group + "wh", "user": user.string, "session": session,
            "how": how.rawValue, "clear": clearCustomStatus,
        ])
    }

    /// `status.setCustom`: the user's custom status (nil: cleared) for `ttlMs`. Answers
    /// ``Changed`` whose result is the user's record.
    static func setCustomStatus(keys: ClusterKeys, user: Name, session: String, customStatus: String?, ttlMs: Int64) -> StoreCommand {
        let mine = keys.user(user)
        return setCustomStatus.command([
            "status": mine.status, "customExpiries": mine.customStatusExpiries, "prefix": keys.prefix, "groups": keys.groups.count,
            "hooks": keys.webhookHooks, "webhookStream": mine.group + "wh", "user": user.string, "session": session, "custom": customArgument(customStatus), "ttl": ttlMs,
        ])
    }

    /// `status.records`: the records of `users`, in order. Answers ``Changed`` whose result
    /// is one record (or nil) per user.
    static func records(keys: ClusterKeys, users: [Name]) -> StoreCommand {
        precondition(!users.isEmpty, "status.records needs a user to be routed by")
        return records.command(["anyUsersStatus": keys.user(users[0]).status, "prefix": keys.prefix, "groups": keys.groups.count,
                                "hooks": keys.webhookHooks, "webhookStream": keys.user(users[0]).group + "wh"], rest: users.map { Array($0.string.utf8) })
    }

    /// `status.subscribe`: `subscriber` subscribes to `targets` (never itself) for
    /// `durationMs`, within the two caps. Answers ``Changed`` whose result is a ``Subscribed``.
    static func subscribe(keys: ClusterKeys, subscriber: Name, durationMs: Int64, maxSubscriptions: Int, maxSubscribers: Int,
                          targets: [Name]) -> StoreCommand {
        subscribe.command([
            "expiries": keys.user(subscriber).subscriptionExpiries, "subscriptionIndex": keys.user(subscriber).subscriptionExpiryIndex,
            "prefix": keys.prefix, "groups": keys.groups.count, "hooks": keys.webhookHooks, "webhookStream": keys.user(subscriber).group + "wh",
            "me": subscriber.string, "duration": durationMs, "maxSubs": maxSubscriptions,
            "maxSubscribers": maxSubscribers,
        ], rest: targets.map { Array($0.string.utf8) })
    }

    /// `status.admit`: `subscriber` joins the subscribers of `targets` (all of one key group)
    /// for `durationMs`, each within `maxSubscribers`. Answers ``Changed`` whose result is
    /// ``Admitted``.
    static func admit(keys: ClusterKeys, subscriber: Name, durationMs: Int64, maxSubscribers: Int, targets: [Name]) -> StoreCommand {
        precondition(!targets.isEmpty, "status.admit needs a target to be routed by")
        return admit.command(["anyTargetsStatus": keys.user(targets[0]).status, "prefix": keys.prefix, "groups": keys.groups.count,
                              "hooks": keys.webhookHooks, "webhookStream": keys.user(targets[0]).group + "wh", "me": subscriber.string, "duration": durationMs, "maxSubscribers": maxSubscribers],
                             rest: targets.map { Array($0.string.utf8) })
    }

    /// `status.subscribeAdmitted`: the admitted `targets` become or stay subscriptions of
    /// `subscriber`. Answers ``Changed`` whose result is ``Subscribed`` (no records).
    static func subscribeAdmitted(keys: ClusterKeys, subscriber: Name, durationMs: Int64, maxSubscriptions: Int,
                                  targets: [Name]) -> StoreCommand {
        subscribeAdmitted.command([
            "expiries": keys.user(subscriber).subscriptionExpiries, "subscriptionIndex": keys.user(subscriber).subscriptionExpiryIndex,
            "prefix": keys.prefix, "groups": keys.groups.count, "hooks": keys.webhookHooks,
            "me": subscriber.string, "duration": durationMs, "maxSubs": maxSubscriptions,
        ], rest: targets.map { Array($0.string.utf8) })
    }

    /// `status.dropSubscriber`: `subscriber` leaves the subscribers of `targets` (all of one
    /// key group).
    static func dropSubscriber(keys: ClusterKeys, subscriber: Name, targets: [Name]) -> StoreCommand {
        precondition(!targets.isEmpty, "status.dropSubscriber needs a target to be routed by")
        return dropSubscriber.command(["anyTargetsStatus": keys.user(targets[0]).status, "prefix": keys.prefix, "groups": keys.groups.count,
                                       "hooks": keys.webhookHooks, "me": subscriber.string], rest: targets.map { Array($0.string.utf8) })
    }

    /// `status.unsubscribe`: `targets`, or every subscription when `all`. Answers the targets
    /// that were subscribed and are not any more (``removedTargets(_:)``).
    static func unsubscribe(keys: ClusterKeys, subscriber: Name, all: Bool, targets: [Name]) -> StoreCommand {
        unsubscribe.command(["expiries": keys.user(subscriber).subscriptionExpiries, "subscriptionIndex": keys.user(subscriber).subscriptionExpiryIndex,
                             "prefix": keys.prefix, "groups": keys.groups.count,
                             "hooks": keys.webhookHooks, "me": subscriber.string, "all": all], rest: targets.map { Array($0.string.utf8) })
    }

    /// `status.subscriptions`: the live subscriptions of `subscriber` (``subscriptionExpiries(_:)``).
    static func subscriptions(keys: ClusterKeys, subscriber: Name) -> StoreCommand {
        subscriptions.command(["expiries": keys.user(subscriber).subscriptionExpiries, "prefix": keys.prefix, "groups": keys.groups.count,
                               "hooks": keys.webhookHooks, "me": subscriber.string])
    }

    /// `status.resync`: per user of `users` (all of one key group), its own record if it
    /// changed in the last `windowMs`, and its catch-up (``CatchUp``). Answers ``Changed``
    /// whose result holds `{own record or false, catch-up}` per user.
    static func resync(keys: ClusterKeys, windowMs: Int64, users: [Name]) -> StoreCommand {
        precondition(!users.isEmpty, "status.resync needs a user to be routed by")
        return resync.command(["anyUsersStatus": keys.user(users[0]).status, "prefix": keys.prefix, "groups": keys.groups.count,
                               "hooks": keys.webhookHooks, "webhookStream": keys.user(users[0]).group + "wh", "window": windowMs], rest: users.map { Array($0.string.utf8) })
    }

    /// `status.changedSince`: the records of `targets` (all of one key group) changed after
    /// `since` (Redis ms). Answers ``Changed`` whose result is those records.
    static func changedSince(keys: ClusterKeys, since: Int64, targets: [Name]) -> StoreCommand {
        precondition(!targets.isEmpty, "status.changedSince needs a target to be routed by")
        return changedSince.command(["anyTargetsStatus": keys.user(targets[0]).status, "prefix": keys.prefix, "groups": keys.groups.count,
                                     "hooks": keys.webhookHooks, "webhookStream": keys.user(targets[0]).group + "wh", "since": since], rest: targets.map { Array($0.string.utf8) })
    }

    /// `status.sweep` of key group `group`: clears up to `limit` of its expired custom statuses
    /// and drops its subscribers' expired subscriptions. Answers ``Changed`` whose result is
    /// the group's count of unexpired subscriptions.
    static func sweep(keys: ClusterKeys, group: Int, limit: Int) -> StoreCommand {
        let tag = keys.groupTag(group)
        return sweep.command(["customExpiries": tag + "csx", "subscriptionExpiries": tag + "subexp", "prefix": keys.prefix,
                              "groups": keys.groups.count, "hooks": keys.webhookHooks, "webhookStream": keys.webhookStream(group: group),
                              "limit": limit])
    }

    /// A custom status as a script argument: `-` for none, else `=` and the text.
    static func customArgument(_ value: String?) -> [UInt8] {
        guard let value else { return [UInt8(ascii: "-")] }
        return [UInt8(ascii: "=")] + Array(value.utf8)
    }

    // MARK: - Replies

    /// The answer of a script that can change records, `{result, announced changes}`.
    struct Changed {
        /// The script's own answer.
        let result: StoreReply
        /// The changes it made, for the node to publish to the inboxes (``Announcement``).
        let announced: [Announcement]

        init(_ reply: StoreReply) {
            result = reply[0]
            announced = (reply[1].elements ?? []).compactMap(Announcement.init)
        }
    }

    /// `status.subscribe`'s result: `{codes, records, evicted}`.
    struct Subscribed {
        /// What happened to one target.
        enum Outcome: Equatable {
            /// A new subscription.
            case added
            /// An existing one, renewed.
            case renewed
            /// Refused: the target has `maxSubscribersPerUser` subscribers.
            case targetSubscriberLimit
        }

        /// Per target, in the order given: what happened, and its record (nil when refused).
        let outcomes: [(outcome: Outcome, record: UserStatusRecord?)]
        /// The subscriptions the cap dropped, earliest made first.
        let evicted: [Name]

        /// The outcomes and evictions as they are.
        init(outcomes: [(outcome: Outcome, record: UserStatusRecord?)], evicted: [Name]) {
            self.outcomes = outcomes
            self.evicted = evicted
        }

        /// The answer of `status.subscribe`, or of `status.subscribeAdmitted` (codes with no
        /// records: those came from `status.admit`).
        init(_ result: StoreReply) {
            let codes = result[0].elements ?? []
            let records = result[1].elements ?? []
            outcomes = codes.enumerated().map { index, code in
                let record = index < records.count ? UserStatusScripts.record(records[index]) : nil
                return switch code.text {
                case "l": (.targetSubscriberLimit, nil)
                case "a": (.added, record)
                default: (.renewed, record)
                }
            }
            evicted = (result[2].elements ?? []).compactMap { $0.text.map(Name.init(unchecked:)) }
        }
    }

    /// `status.admit`'s result: per target, in the order given, whether it took the subscriber
    /// and its record (nil when it has `maxSubscribersPerUser` others).
    struct Admitted {
        let outcomes: [(admitted: Bool, record: UserStatusRecord?)]

        init(_ result: StoreReply) {
            let codes = result[0].elements ?? []
            let records = result[1].elements ?? []
            outcomes = zip(codes, records).map { code, record in
                code.text == "ok" ? (true, UserStatusScripts.record(record)) : (false, nil)
            }
        }
    }

    /// `status.unsubscribe`'s answer: the targets removed.
    static func removedTargets(_ reply: StoreReply) -> [Name] {
        (reply.elements ?? []).compactMap { $0.text.map(Name.init(unchecked:)) }
    }

    /// `status.subscriptions`' answer (`target, expiresAt` pairs): each target's expiry (ms).
    static func subscriptionExpiries(_ reply: StoreReply) -> [Name: Timestamp] {
        let flat = reply.elements ?? []
        var expiries: [Name: Timestamp] = [:]
        var index = 0
        while index + 1 < flat.count {
            if let target = flat[index].text { expiries[Name(unchecked: target)] = flat[index + 1].integer ?? 0 }
            index += 2
        }
        return expiries
    }

    /// A record the scripts return: `{user, status, lu, lo, lc, platforms, customStatus or nil}`.
    static func record(_ reply: StoreReply) -> UserStatusRecord? {
        guard let user = reply[0].text else { return nil }
        return record(user: user, status: reply[1].text ?? "", times: (reply[2].integer ?? 0, reply[3].integer ?? 0, reply[4].integer ?? 0),
                      platforms: reply[5].text ?? "", customStatus: reply[6].text)
    }

    /// A record from its stored fields (a script's reply, or a record in a user's inbox).
    static func record(user: String, status: String, times: (Int64, Int64, Int64), platforms: String,
                       customStatus: String?) -> UserStatusRecord {
        let stored = StoredUserStatus(
            userId: Name(unchecked: user), status: OnlineStatus(rawValue: status) ?? .loggedOut, customStatus: customStatus,
            lastUpdateTime: times.0, lastOnlineStatusUpdateTime: times.1, lastCustomStatusUpdateTime: times.2)
        return UserStatusRecord(stored: stored, platforms: platforms.split(separator: ",").compactMap { Platform(rawValue: String($0)) })
    }

    /// A catch-up list of records, ordered by user id.
    static func catchUp(_ reply: StoreReply) -> [UserStatusRecord] {
        (reply.elements ?? []).compactMap(record).sorted { $0.stored.userId < $1.stored.userId }
    }

    /// The version of each record of a list (`{…, version}`): what the user's inbox may bring
    /// again after a catch-up, for the node to drop (``ClusterUserStatus/deliver(channel:payload:)``).
    static func versions(_ reply: StoreReply) -> [String: Int64] {
        var versions: [String: Int64] = [:]
        for element in reply.elements ?? [] {
            if let user = element[0].text, let version = element[7].integer { versions[user] = version }
        }
        return versions
    }

    /// A catch-up as `status.started`, `resumed` or `resync` answer it: the records (one key
    /// group: the script read them), or, over several key groups, the subscribed targets whose
    /// records changed after `since` are to be read per group (`{'=since', since, target…}`:
    /// ``changedSince(keys:since:targets:)``).
    enum CatchUp {
        case records([UserStatusRecord], versions: [String: Int64])
        case targets(since: Int64, [Name])

        init(_ reply: StoreReply) {
            let elements = reply.elements ?? []
            guard elements.first?.text == "=since" else {
                self = .records(UserStatusScripts.catchUp(reply), versions: UserStatusScripts.versions(reply))
                return
            }
            let since = elements.count > 1 ? Int64(elements[1].text ?? "") ?? elements[1].integer ?? 0 : 0
            self = .targets(since: since, elements.dropFirst(2).compactMap { $0.text.map(Name.init(unchecked:)) })
        }
    }
}
