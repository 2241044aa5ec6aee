import Foundation
import GRDB
import Logging
import RollcallCore

/// ``StatusStore`` in one SQLite file (GRDB), WAL mode, versioned schema.
///
/// - Opening validates the file (integrity check, schema version, a test write) and reads
///   everything; a corrupt or unwritable file throws ``StatusStoreError`` naming the path —
///   the broker never silently starts empty.
/// - ``write(_:)`` only appends to an in-memory queue under a lock. A background thread
///   commits the queue in one transaction every ``commitInterval`` (200 ms by default), so a
///   change is durable well within 1 s; with nothing to write it still records that the
///   broker is alive about once a second (`lastAliveAt`, used after a crash).
/// - ``flush()`` commits what is queued synchronously; ``close()`` flushes and stops the thread.
///
/// Committed transactions survive `kill -9` (WAL, `synchronous = NORMAL`).
///
/// **Failures surface, bounded.** A failed commit puts its batch back at the head of the
/// queue and is retried at the next interval. The queue holds at most ``maxPendingWrites``
/// changes: past that the oldest are dropped (counted, and logged once per streak), so a
/// full disk costs bounded memory instead of growing without end. Every failure is counted
/// and reflected in ``health`` (the broker's `/healthz` answers 503 with the error while
/// commits fail); the first failure of a streak is logged with the error, then one line per
/// ``failureLogInterval``, and the recovery is logged with what the streak cost.
public final class SQLiteStatusStore: StatusStore, @unchecked Sendable {
    /// The database file.
    public let path: String
    /// How often the background thread commits.
    public let commitInterval: TimeInterval
    /// The most changes the queue holds while commits fail; older ones are dropped past it.
    public let maxPendingWrites: Int
    /// At most one "still failing" log line per this many seconds.
    static let failureLogInterval: TimeInterval = 10

    private let queue: DatabaseQueue
    private let clock: BrokerClock
    /// What was read at open, until ``load()`` hands it over.
    private var snapshot: StatusSnapshot?
    /// Guards `pending`, `stopping`, `lastError`; signalled to stop the thread.
    private let condition = NSCondition()
    private var pending: [StatusChange] = []
    private var stopping = false
    private var threadDone = false
    private var closed = false
    private var lastError: StatusStoreError?
    private var failingSince: Timestamp?
    private var writeFailures = 0
    private var droppedWrites = 0
    /// Failures and drops of the current streak, for the recovery log line.
    private var streakFailures = 0
    private var streakDrops = 0
    private var lastFailureLog: Date?
    private let logger: Logger
    /// Serialises commits so batches land in the order they were queued.
    private let commitLock = NSLock()
    private var lastAliveWrite: Timestamp = 0

    /// Opens (creating if needed) the database at `path`, migrates it, reads everything and
    /// starts the background writer.
    /// `busyTimeout` is how long a commit waits for a lock another process holds.
    public init(path: String, clock: BrokerClock = SystemClock(), commitInterval: TimeInterval = 0.2,
                maxPendingWrites: Int = 100_000, busyTimeout: TimeInterval = 5,
                logger: Logger = Logger(label: "rollcall.storage")) throws(StatusStoreError) {
        self.path = path
        self.clock = clock
        self.commitInterval = commitInterval
        self.maxPendingWrites = max(1, maxPendingWrites)
        self.logger = logger
        do {
            var configuration = GRDB.Configuration()
            configuration.label = "rollcall.status"
            configuration.busyMode = .timeout(busyTimeout)
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch {
            throw Self.classify(error, path: path, doing: "open")
        }
        do {
            try queue.writeWithoutTransaction { db in
                let check = try String.fetchOne(db, sql: "PRAGMA quick_check") ?? "no answer"
                guard check == "ok" else { throw SchemaProblem(text: "integrity check failed: \(check)") }
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") ?? ""
                guard mode.lowercased() == "wal" else { throw SchemaProblem(text: "could not enable WAL (journal_mode \(mode))") }
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            let migrator = StatusSchema.migrator
            if try queue.read({ try migrator.hasBeenSuperseded($0) }) {
                throw SchemaProblem(text: "the database was written by a newer Rollcall (unknown schema migrations)")
            }
            try migrator.migrate(queue)
            // Proves the file is writable now rather than at the first commit.
            try queue.write { db in
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('openedAt', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                               arguments: [clock.now])
            }
            snapshot = try queue.read(Self.readSnapshot)
        } catch let problem as SchemaProblem {
            throw StatusStoreError(.corrupt, "\(path): \(problem.text)")
        } catch {
            throw Self.classify(error, path: path, doing: "read")
        }
        let thread = Thread { [self] in runWriter() }
        thread.name = "rollcall-status-writer"
        thread.start()
    }

    // MARK: - StatusStore

    /// Everything read at open. The first call hands it over and the store forgets it (it
    /// would otherwise hold a second copy of all data); later calls return an empty snapshot.
    public func load() -> StatusSnapshot {
        condition.lock(); defer { condition.unlock() }
        let loaded = snapshot ?? StatusSnapshot()
        snapshot = nil
        return loaded
    }

    public func write(_ change: StatusChange) {
        condition.lock()
        pending.append(change)
        dropOverflow()
        condition.unlock()
    }

    /// Drops the oldest queued changes past ``maxPendingWrites`` (caller holds `condition`).
    private func dropOverflow() {
        let excess = pending.count - maxPendingWrites
        guard excess > 0 else { return }
        pending.removeFirst(excess)
        droppedWrites += excess
        let firstDrop = streakDrops == 0
        streakDrops += excess
        if firstDrop {
            logger.error("durable write queue full: dropping the oldest changes", metadata: [
                "path": "\(path)", "maxPendingWrites": "\(maxPendingWrites)", "dropped": "\(excess)"])
        }
    }

    public func flush() throws(StatusStoreError) {
        try commitPending(force: true)
    }

    /// Flushes, stops the background writer and closes the file. The store is unusable after;
    /// a second call does nothing. Until it is called the writer thread keeps the store alive.
    public func close() throws(StatusStoreError) {
        condition.lock()
        if closed {
            condition.unlock()
            return
        }
        closed = true
        stopping = true
        condition.broadcast()
        while !threadDone { condition.wait() }
        condition.unlock()
        try flush()
        do { try queue.close() } catch { throw Self.classify(error, path: path, doing: "close") }
    }

    /// Changes queued and not yet committed.
    public var pendingCount: Int {
        condition.lock(); defer { condition.unlock() }
        return pending.count
    }

    /// The last background commit failure, if the latest commit failed.
    public var lastWriteError: StatusStoreError? {
        condition.lock(); defer { condition.unlock() }
        return lastError
    }

    public var health: StorageHealth {
        condition.lock(); defer { condition.unlock() }
        return StorageHealth(failure: lastError, failingSince: failingSince, writeFailures: writeFailures,
                             droppedWrites: droppedWrites, pendingWrites: pending.count)
    }

    // MARK: - Writing

    private func runWriter() {
        while true {
            condition.lock()
            if !stopping { _ = condition.wait(until: Date(timeIntervalSinceNow: commitInterval)) }
            if stopping {
                threadDone = true
                condition.broadcast()
                condition.unlock()
                return
            }
            condition.unlock()
            // A failure is recorded, counted and logged by commitPending; the batch waits for
            // the next turn.
            try? commitPending(force: false)
        }
    }

    /// Commits the queue in one transaction, with the alive mark. Without `force`, an empty
    /// queue only refreshes the alive mark about once a second.
    private func commitPending(force: Bool) throws(StatusStoreError) {
        commitLock.lock()
        defer { commitLock.unlock() }
        condition.lock()
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        condition.unlock()
        let now = clock.now
        if batch.isEmpty, !force, now - lastAliveWrite < 1000 { return }
        do {
            try queue.write { db in
                for change in batch { try Self.apply(change, in: db) }
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('lastAliveAt', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                               arguments: [now])
            }
            lastAliveWrite = now
            condition.lock()
            if lastError != nil {
                logger.notice("durable writes recovered", metadata: [
                    "path": "\(path)", "failedCommits": "\(streakFailures)", "droppedChanges": "\(streakDrops)"])
            }
            lastError = nil
            failingSince = nil
            streakFailures = 0
            streakDrops = 0
            lastFailureLog = nil
            condition.unlock()
        } catch {
            let failure = StatusStoreError(.writeFailed, "\(path): commit of \(batch.count) changes failed: \(error)")
            condition.lock()
            pending.insert(contentsOf: batch, at: 0)
            dropOverflow()
            lastError = failure
            failingSince = failingSince ?? now
            writeFailures += 1
            streakFailures += 1
            let sinceLog = lastFailureLog.map { Date().timeIntervalSince($0) } ?? .infinity
            if sinceLog >= Self.failureLogInterval {
                lastFailureLog = Date()
                logger.error("durable write failed; retrying", metadata: [
                    "error": "\(failure.message)", "pending": "\(pending.count)", "failedCommits": "\(streakFailures)"])
            }
            condition.unlock()
            throw failure
        }
    }

    private static func apply(_ change: StatusChange, in db: Database) throws {
        switch change {
        case .upsertUser(let user):
            try db.execute(sql: """
                INSERT INTO user_status (user_id, status, custom_status, custom_status_expires_at, last_update_time,
                    last_online_status_update_time, last_custom_status_update_time, last_session_ended_at, version)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(user_id) DO UPDATE SET status = excluded.status, custom_status = excluded.custom_status,
                    custom_status_expires_at = excluded.custom_status_expires_at, last_update_time = excluded.last_update_time,
                    last_online_status_update_time = excluded.last_online_status_update_time,
                    last_custom_status_update_time = excluded.last_custom_status_update_time,
                    last_session_ended_at = excluded.last_session_ended_at, version = excluded.version
                """, arguments: [user.userId.string, user.status.rawValue, user.customStatus, user.customStatusExpiresAt,
                                 user.lastUpdateTime, user.lastOnlineStatusUpdateTime, user.lastCustomStatusUpdateTime,
                                 user.lastSessionEndedAt, user.version])
        case .upsertSubscription(let subscription):
            try db.execute(sql: """
                INSERT INTO subscription (subscriber, target, created_at, expires_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(subscriber, target) DO UPDATE SET created_at = excluded.created_at, expires_at = excluded.expires_at
                """, arguments: [subscription.subscriber.string, subscription.target.string,
                                 subscription.createdAt, subscription.expiresAt])
        case .deleteSubscription(let subscriber, let target):
            try db.execute(sql: "DELETE FROM subscription WHERE subscriber = ? AND target = ?",
                           arguments: [subscriber.string, target.string])
        }
    }

    // MARK: - Reading

    private static func readSnapshot(_ db: Database) throws -> StatusSnapshot {
        var snapshot = StatusSnapshot()
        for row in try Row.fetchAll(db, sql: "SELECT * FROM user_status ORDER BY user_id") {
            let rawId: String = row["user_id"]
            let rawStatus: String = row["status"]
            guard let userId = Name(rawId), let status = OnlineStatus(rawValue: rawStatus) else {
                throw SchemaProblem(text: "bad user_status row for \(rawId.debugDescription)")
            }
            snapshot.users.append(StoredUserStatus(
                userId: userId, status: status,
                customStatus: row["custom_status"], customStatusExpiresAt: row["custom_status_expires_at"],
                lastUpdateTime: row["last_update_time"], lastOnlineStatusUpdateTime: row["last_online_status_update_time"],
                lastCustomStatusUpdateTime: row["last_custom_status_update_time"],
                lastSessionEndedAt: row["last_session_ended_at"], version: row["version"]))
        }
        for row in try Row.fetchAll(db, sql: "SELECT * FROM subscription ORDER BY subscriber, target") {
            let rawSubscriber: String = row["subscriber"]
            let rawTarget: String = row["target"]
            guard let subscriber = Name(rawSubscriber), let target = Name(rawTarget) else {
                throw SchemaProblem(text: "bad subscription row \(rawSubscriber.debugDescription) → \(rawTarget.debugDescription)")
            }
            snapshot.subscriptions.append(StoredSubscription(
                subscriber: subscriber, target: target, createdAt: row["created_at"], expiresAt: row["expires_at"]))
        }
        snapshot.lastAliveAt = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'lastAliveAt'")
        return snapshot
    }

    // MARK: - Errors

    private struct SchemaProblem: Error { let text: String }

    private static func classify(_ error: any Error, path: String, doing: String) -> StatusStoreError {
        if let problem = error as? SchemaProblem {
            return StatusStoreError(.corrupt, "\(path): \(problem.text)")
        }
        if let database = error as? DatabaseError {
            switch database.resultCode {
            case .SQLITE_NOTADB, .SQLITE_CORRUPT, .SQLITE_FORMAT:
                return StatusStoreError(.corrupt, "\(path) is not a valid Rollcall database (\(database.message ?? "corrupt")); move it away or restore a backup")
            case .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_AUTH, .SQLITE_IOERR, .SQLITE_FULL:
                return StatusStoreError(.unwritable, "cannot \(doing) \(path) for writing (\(database.message ?? "\(database.resultCode)")); check the path and its permissions")
            default:
                return StatusStoreError(.corrupt, "cannot \(doing) \(path): \(database)")
            }
        }
        return StatusStoreError(.unwritable, "cannot \(doing) \(path): \(error)")
    }
}
