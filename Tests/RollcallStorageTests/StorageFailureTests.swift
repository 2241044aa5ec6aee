import Foundation
import GRDB
import Testing
import RollcallCore
@testable import RollcallStorage

/// Durable-write failures are bounded, counted and visible in ``StatusStore/health``, and the
/// store recovers by itself once the database is writable again.
@Suite("SQLite status store failures")
struct StorageFailureTests {
    private func user(_ index: Int) -> StoredUserStatus {
        StoredUserStatus(userId: Name("u\(index)")!, status: .online, lastUpdateTime: Int64(index))
    }

    /// Holds an exclusive lock on the database from another connection: every commit of the
    /// store then fails with SQLITE_BUSY after its (short) busy timeout.
    private final class Locker {
        let queue: DatabaseQueue
        init(path: String) throws {
            var configuration = GRDB.Configuration()
            configuration.allowsUnsafeTransactions = true
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in try db.execute(sql: "BEGIN EXCLUSIVE") }
        }
        func release() throws {
            try queue.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
            try queue.close()
        }
    }

    @Test("a failing commit is counted, keeps its changes for a retry, shows in health, and recovers")
    func failureAndRecovery() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        let store = try SQLiteStatusStore(path: path, commitInterval: 0.02, busyTimeout: 0.01)
        defer { try? store.close() }
        #expect(store.health.isHealthy)

        let locker = try Locker(path: path)
        store.write(.upsertUser(user(1)))
        #expect(eventually(within: 5) { store.health.writeFailures >= 2 })
        let failing = store.health
        #expect(failing.failure?.code == .writeFailed)
        #expect(failing.failingSince != nil)
        #expect(failing.pendingWrites == 1)
        #expect(failing.droppedWrites == 0)
        #expect(throws: StatusStoreError.self) { try store.flush() }

        try locker.release()
        #expect(eventually(within: 5) { store.health.isHealthy })
        let recovered = store.health
        #expect(recovered.pendingWrites == 0)
        #expect(recovered.failingSince == nil)
        #expect(recovered.writeFailures >= 2)
        try store.close()
        let reopened = try SQLiteStatusStore(path: path)
        defer { try? reopened.close() }
        #expect(reopened.load().users.map(\.userId.string) == ["u1"])
    }

    @Test("while commits fail the queue is capped: the oldest changes are dropped and counted")
    func boundedQueue() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        let store = try SQLiteStatusStore(path: path, commitInterval: 0.02, maxPendingWrites: 10, busyTimeout: 0.01)
        defer { try? store.close() }
        let locker = try Locker(path: path)
        for index in 1...25 { store.write(.upsertUser(user(index))) }
        #expect(eventually(within: 5) { store.health.writeFailures >= 1 })
        let health = store.health
        #expect(health.pendingWrites == 10)
        #expect(health.droppedWrites == 15)
        try locker.release()
        #expect(eventually(within: 5) { store.health.isHealthy && store.health.pendingWrites == 0 })
        try store.close()
        let reopened = try SQLiteStatusStore(path: path)
        defer { try? reopened.close() }
        // The newest ten survived.
        #expect(reopened.load().users.map(\.lastUpdateTime).sorted() == Array(16...25).map(Int64.init))
    }

    @Test("the memory store is always healthy and close() is part of the protocol")
    func memoryStore() throws {
        let store: any StatusStore = MemoryStatusStore()
        #expect(store.health == .healthy)
        try store.close()
    }
}
