/// Durable user-status data (PROTOCOL §6): subscriptions, custom statuses, last status and
/// its times, and when each user's previous session ended.
///
/// The contract is deliberately small so that other backends (SQLite now, Redis for several
/// nodes later) implement the same three calls:
/// - ``load()`` once, when the engine starts: everything durable, as it was read when the
///   store was opened (opening is where a backend validates its file and throws);
/// - ``write(_:)`` on the hot path: write-behind, must return at once without I/O;
/// - ``flush()`` at shutdown: commits everything queued before returning;
/// - ``close()`` after the last flush: stops the backend's own threads and closes its files;
/// - ``health``, read by `/healthz` and `/metrics`: whether durable writes are failing now,
///   and the counts of failures and dropped changes. A backend never swallows a failure.
///
/// The store never interprets the data; rules such as "online at load reads offline" live in
/// ``UserStatusEngine`` so that every backend behaves the same.
public protocol StatusStore: AnyObject {
    /// Everything durable. Called once, by the engine's initializer (a backend may hand its
    /// data over and forget it, so a second call may return less).
    func load() -> StatusSnapshot
    /// Queues one change for a later commit; returns without waiting for I/O.
    func write(_ change: StatusChange)
    /// Commits every queued change before returning (synchronous; called at shutdown).
    func flush() throws(StatusStoreError)
    /// Flushes, then releases the backend (threads, files); later calls do nothing.
    func close() throws(StatusStoreError)
    /// How durable writes are doing now. Cheap; safe to read from the service thread.
    var health: StorageHealth { get }
}

/// How a store's durable writes are doing, for `/healthz` (503 while ``failure`` is set) and
/// `/metrics`.
public struct StorageHealth: Sendable, Equatable {
    /// The latest commit's error while commits keep failing; nil once one succeeds.
    public var failure: StatusStoreError?
    /// Wall time of the first failure of the current streak; nil while healthy.
    public var failingSince: Timestamp?
    /// Commits that failed, since start.
    public var writeFailures: Int
    /// Changes dropped because the retry queue was full (oldest first), since start.
    public var droppedWrites: Int
    /// Changes queued and not committed yet.
    public var pendingWrites: Int

    /// A store with nothing wrong and nothing waiting.
    public static let healthy = StorageHealth(failure: nil, failingSince: nil, writeFailures: 0, droppedWrites: 0, pendingWrites: 0)

    public init(failure: StatusStoreError?, failingSince: Timestamp?, writeFailures: Int, droppedWrites: Int, pendingWrites: Int) {
        self.failure = failure
        self.failingSince = failingSince
        self.writeFailures = writeFailures
        self.droppedWrites = droppedWrites
        self.pendingWrites = pendingWrites
    }

    /// True while the latest commit succeeded (or nothing was committed yet).
    public var isHealthy: Bool { failure == nil }
}

/// The whole durable state, as handed to the engine at start.
public struct StatusSnapshot: Sendable, Equatable {
    /// One row per user ever seen.
    public var users: [StoredUserStatus]
    /// Every subscription not deleted (expired ones may be included; the engine drops them).
    public var subscriptions: [StoredSubscription]
    /// The last moment the previous broker process is known to have been running (its last
    /// commit), or nil when unknown. Users still `online` in the data went offline then.
    public var lastAliveAt: Timestamp?

    public init(users: [StoredUserStatus] = [], subscriptions: [StoredSubscription] = [], lastAliveAt: Timestamp? = nil) {
        self.users = users
        self.subscriptions = subscriptions
        self.lastAliveAt = lastAliveAt
    }
}

/// A user's durable status record (platforms are not durable: they come from live sessions).
public struct StoredUserStatus: Sendable, Equatable {
    // Ordered so that the optionals' and the status' single bytes do not each pad to 8
    // (stride 88 instead of 96; one per user in the engine's table).
    /// The user.
    public var userId: Name
    /// The custom status, nil when none.
    public var customStatus: String?
    /// When anything in the record (status, custom status, platforms) last changed.
    public var lastUpdateTime: Timestamp
    /// When `status` last changed.
    public var lastOnlineStatusUpdateTime: Timestamp
    /// When `customStatus` last changed.
    public var lastCustomStatusUpdateTime: Timestamp
    /// When the custom status expires; nil when there is none.
    public var customStatusExpiresAt: Timestamp?
    /// When the user's most recent session ended; nil if none ever ended.
    public var lastSessionEndedAt: Timestamp?
    /// *(1.2)* Steps by one with every change of the record (its `userStatus` webhook events
    /// carry it); 0 for a record never changed.
    public var version: Int64
    /// `online`, `offline` or `loggedOut` as last written.
    public var status: OnlineStatus

    public init(userId: Name, status: OnlineStatus, customStatus: String? = nil, customStatusExpiresAt: Timestamp? = nil,
                lastUpdateTime: Timestamp = 0, lastOnlineStatusUpdateTime: Timestamp = 0,
                lastCustomStatusUpdateTime: Timestamp = 0, lastSessionEndedAt: Timestamp? = nil, version: Int64 = 0) {
        self.userId = userId
        self.version = version
        self.status = status
        self.customStatus = customStatus
        self.customStatusExpiresAt = customStatusExpiresAt
        self.lastUpdateTime = lastUpdateTime
        self.lastOnlineStatusUpdateTime = lastOnlineStatusUpdateTime
        self.lastCustomStatusUpdateTime = lastCustomStatusUpdateTime
        self.lastSessionEndedAt = lastSessionEndedAt
    }
}

/// One subscription: `subscriber` hears about `target` until `expiresAt`.
public struct StoredSubscription: Sendable, Equatable {
    /// Who subscribed.
    public var subscriber: Name
    /// Whose status they follow.
    public var target: Name
    /// When it was first made (its age for `maxSubscriptionsPerUser`; renewing keeps it).
    public var createdAt: Timestamp
    /// When it lapses.
    public var expiresAt: Timestamp

    public init(subscriber: Name, target: Name, createdAt: Timestamp, expiresAt: Timestamp) {
        self.subscriber = subscriber
        self.target = target
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// One write-behind mutation.
public enum StatusChange: Sendable, Equatable {
    /// Insert or replace the user's record.
    case upsertUser(StoredUserStatus)
    /// Insert or replace the subscription `(subscriber, target)`.
    case upsertSubscription(StoredSubscription)
    /// Delete the subscription `(subscriber, target)` if present.
    case deleteSubscription(subscriber: Name, target: Name)
}

/// A storage failure, with a stable code and a message meant for an operator.
public struct StatusStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable codes.
    public enum Code: String, Sendable {
        /// The file is not a database, is damaged, or has a schema this build cannot read.
        case corrupt
        /// The file or its directory cannot be opened or written.
        case unwritable
        /// A commit failed after the store was opened.
        case writeFailed
    }

    /// What went wrong.
    public let code: Code
    /// Operator-facing text naming the file.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "storage \(code.rawValue): \(message)" }
}

/// Keeps durable data in memory only (`storage.path: null`, and tests).
///
/// Applies each change at once, so a second broker given the same instance sees what the
/// first wrote — the way tests simulate a restart.
public final class MemoryStatusStore: StatusStore {
    private var users: [Name: StoredUserStatus] = [:]
    private var subscriptions: [SubscriptionKey: StoredSubscription] = [:]
    private var lastAliveAt: Timestamp?

    /// An empty store.
    public init() {}

    /// A store holding `snapshot` (tests).
    public init(_ snapshot: StatusSnapshot) {
        for user in snapshot.users { users[user.userId] = user }
        for subscription in snapshot.subscriptions {
            subscriptions[SubscriptionKey(subscriber: subscription.subscriber, target: subscription.target)] = subscription
        }
        lastAliveAt = snapshot.lastAliveAt
    }

    public func load() -> StatusSnapshot {
        StatusSnapshot(
            users: users.values.sorted { $0.userId < $1.userId },
            subscriptions: subscriptions.values.sorted {
                ($0.subscriber, $0.target) < ($1.subscriber, $1.target)
            },
            lastAliveAt: lastAliveAt)
    }

    public func write(_ change: StatusChange) {
        switch change {
        case .upsertUser(let user):
            users[user.userId] = user
            lastAliveAt = max(lastAliveAt ?? user.lastUpdateTime, user.lastUpdateTime)
        case .upsertSubscription(let subscription):
            subscriptions[SubscriptionKey(subscriber: subscription.subscriber, target: subscription.target)] = subscription
        case .deleteSubscription(let subscriber, let target):
            subscriptions[SubscriptionKey(subscriber: subscriber, target: target)] = nil
        }
    }

    public func flush() throws(StatusStoreError) {}

    public func close() throws(StatusStoreError) {}

    /// Memory never fails.
    public var health: StorageHealth { .healthy }
}

/// Keeps nothing (`storage.path: null` in the `rollcall` binary): the user-status engine
/// holds every record and subscription itself and reads its store only once, at start, so a
/// copy that no later process can load is memory for nothing. ``MemoryStatusStore`` keeps its
/// copy for tests that hand one store to a second broker; a binary cannot. At 15,000 users
/// the copy cost ~250 B per user (a hash table of records at its load after growth).
public final class DiscardingStatusStore: StatusStore {
    /// A store that starts empty and stays so.
    public init() {}

    public func load() -> StatusSnapshot { StatusSnapshot(users: [], subscriptions: [], lastAliveAt: nil) }

    public func write(_ change: StatusChange) {}

    public func flush() throws(StatusStoreError) {}

    public func close() throws(StatusStoreError) {}

    /// Nothing to fail.
    public var health: StorageHealth { .healthy }
}

/// `(subscriber, target)`, the identity of a subscription.
package struct SubscriptionKey: Hashable, Sendable {
    /// Who subscribed.
    package let subscriber: Name
    /// Whose status they follow.
    package let target: Name
}
