import Foundation
import GRDB
import RollcallCore

/// Webhook events of one node, kept in `storage.path` until a 2xx acknowledges them (PROTOCOL
/// §11 *(1.2)* "Nothing lost"): table `webhook_event` of the status database (``StatusSchema``
/// v3), one row per event, numbered in the order the core produced them.
///
/// ``append(_:)`` commits the events of one inbound event before it returns (one
/// small WAL transaction, no fsync: `synchronous = NORMAL`), and the server calls it before it
/// writes anything that inbound event produced, so an event the broker produced survives
/// `kill -9` of the process.
/// At start, ``unsettled()`` lists what a previous run left; ``settle(_:)`` deletes events
/// posted (or dropped for good). An event's id is `<journal id>-w<number>`: the journal id is
/// random, made once per database file, so ids stay unique and stable across restarts.
///
/// Used from one thread (the broker's service thread).
public final class SQLiteWebhookJournal {
    /// The database file.
    public let path: String
    /// The prefix of every event id of this file.
    public let journalId: String
    private let queue: DatabaseQueue

    /// Opens (creating and migrating if needed) the database at `path`.
    public init(path: String, busyTimeout: TimeInterval = 5) throws(StatusStoreError) {
        self.path = path
        do {
            var configuration = GRDB.Configuration()
            configuration.label = "rollcall.webhooks"
            configuration.busyMode = .timeout(busyTimeout)
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            try StatusSchema.migrator.migrate(queue)
            let fresh = Self.randomId()
            journalId = try queue.write { db in
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('webhookJournal', ?) ON CONFLICT(key) DO NOTHING",
                               arguments: [fresh])
                let stored = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'webhookJournal'") ?? fresh
                return String(UInt64(bitPattern: stored) & 0xFFFF_FFFF_FFFF, radix: 16)
            }
        } catch {
            throw StatusStoreError(.unwritable, "cannot open \(path) for webhook events: \(error)")
        }
    }

    /// One event, with its id.
    public struct Event: Equatable, Sendable {
        public let id: String
        public let bytes: [UInt8]
    }

    /// Stores `events` in one transaction (committed when this returns); answers their ids, in order.
    public func append(_ events: [[UInt8]]) throws(StatusStoreError) -> [String] {
        do {
            let numbers = try queue.write { db in
                try events.map { bytes in
                    try db.execute(sql: "INSERT INTO webhook_event (body) VALUES (?)", arguments: [Data(bytes)])
                    return db.lastInsertedRowID
                }
            }
            return numbers.map(id)
        } catch {
            throw StatusStoreError(.writeFailed, "\(path): \(events.count) webhook events not stored: \(error)")
        }
    }

    /// Deletes the events `ids` (ids of another journal are ignored).
    public func settle(_ ids: [String]) throws(StatusStoreError) {
        let numbers = ids.compactMap(number)
        guard !numbers.isEmpty else { return }
        do {
            try queue.write { db in
                for chunk in stride(from: 0, to: numbers.count, by: 500) {
                    let part = numbers[chunk..<min(numbers.count, chunk + 500)]
                    let marks = Array(repeating: "?", count: part.count).joined(separator: ",")
                    try db.execute(sql: "DELETE FROM webhook_event WHERE number IN (\(marks))", arguments: StatementArguments(Array(part)))
                }
            }
        } catch {
            throw StatusStoreError(.writeFailed, "\(path): settled webhook events not deleted: \(error)")
        }
    }

    /// Every event not settled yet, oldest first (what a previous run left).
    public func unsettled() throws(StatusStoreError) -> [Event] {
        do {
            return try queue.read { db in
                try Row.fetchAll(db, sql: "SELECT number, body FROM webhook_event ORDER BY number").map { row in
                    let body: Data = row["body"]
                    return Event(id: id(row["number"]), bytes: Array(body))
                }
            }
        } catch {
            throw StatusStoreError(.corrupt, "\(path): webhook events unreadable: \(error)")
        }
    }

    /// Closes the file.
    public func close() {
        try? queue.close()
    }

    private func id(_ number: Int64) -> String { "\(journalId)-w\(number)" }

    private func number(_ id: String) -> Int64? {
        let head = journalId + "-w"
        guard id.hasPrefix(head) else { return nil }
        return Int64(id.dropFirst(head.count))
    }

    private static func randomId() -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return Int64(generator.next() & 0xFFFF_FFFF_FFFF)
    }
}
