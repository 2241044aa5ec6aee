import Foundation
import Testing
import RollcallCore
import RollcallProtocol
@testable import RollcallStorage

/// A fresh directory under the system temp dir, removed by `cleanUp()`.
struct TemporaryDirectory {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-status-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    func cleanUp() { try? FileManager.default.removeItem(at: url) }
}

private func name(_ s: String) -> Name { Name(s)! }

/// Waits (polling, with a deadline) until `condition` holds.
func eventually(within seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

@Suite("SQLite status store")
struct SQLiteStatusStoreTests {
    let alice = StoredUserStatus(
        userId: name("alice"), status: .offline, customStatus: "Busy ☕️", customStatusExpiresAt: 9_000,
        lastUpdateTime: 5_000, lastOnlineStatusUpdateTime: 4_000, lastCustomStatusUpdateTime: 5_000, lastSessionEndedAt: 4_000)
    let bob = StoredUserStatus(userId: name("bob"), status: .loggedOut, lastUpdateTime: 1, lastOnlineStatusUpdateTime: 1)

    @Test func roundTripAfterFlushAndReopen() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        let clock = ManualClock(start: 10_000)
        let store = try SQLiteStatusStore(path: path, clock: clock)
        #expect(store.load() == StatusSnapshot())
        store.write(.upsertUser(alice))
        store.write(.upsertUser(bob))
        var changed = bob
        changed.status = .offline
        store.write(.upsertUser(changed))
        store.write(.upsertSubscription(StoredSubscription(subscriber: name("alice"), target: name("bob"), createdAt: 100, expiresAt: 200)))
        store.write(.upsertSubscription(StoredSubscription(subscriber: name("alice"), target: name("carol"), createdAt: 100, expiresAt: 200)))
        store.write(.upsertSubscription(StoredSubscription(subscriber: name("alice"), target: name("bob"), createdAt: 100, expiresAt: 900)))
        store.write(.deleteSubscription(subscriber: name("alice"), target: name("carol")))
        try store.flush()
        #expect(store.pendingCount == 0)
        try store.close()
        try store.close()  // idempotent

        let reopened = try SQLiteStatusStore(path: path, clock: clock)
        defer { try? reopened.close() }
        let snapshot = reopened.load()
        #expect(snapshot.users == [alice, changed])
        #expect(snapshot.subscriptions == [StoredSubscription(subscriber: name("alice"), target: name("bob"), createdAt: 100, expiresAt: 900)])
        #expect(snapshot.lastAliveAt == 10_000)
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func backgroundWriterCommitsWithinOneSecondWithoutFlush() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        let store = try SQLiteStatusStore(path: path)
        defer { try? store.close() }
        let started = Date()
        store.write(.upsertUser(alice))
        #expect(eventually(within: 1.0) { store.pendingCount == 0 })
        #expect(Date().timeIntervalSince(started) < 1.0)
        // A second connection (as a restarted process would) sees the committed row while the
        // first store is still open and was never flushed or closed.
        let other = try SQLiteStatusStore(path: path)
        defer { try? other.close() }
        #expect(other.load().users == [alice])
    }

    @Test func corruptFileIsRefusedWithAClearError() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: StatusStoreError.self) { try SQLiteStatusStore(path: path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains(path) == true)
    }

    @Test func damagedDatabaseIsRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        let store = try SQLiteStatusStore(path: path)
        for index in 0..<2000 {
            store.write(.upsertSubscription(StoredSubscription(
                subscriber: name("user\(index)"), target: name("target\(index)"), createdAt: 1, expiresAt: 2)))
        }
        try store.close()
        // Scribble over the middle of the file (past the header).
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 4096 + 100)
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 8192))
        try handle.close()
        let error = #expect(throws: StatusStoreError.self) { try SQLiteStatusStore(path: path) }
        #expect(error?.code == .corrupt)
    }

    @Test func newerSchemaIsRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("status.db")
        try SQLiteStatusStore(path: path).close()
        // Pretend a newer build ran a migration this one does not know.
        try GRDBTestAccess.insertMigration("v99: from the future", into: path)
        let error = #expect(throws: StatusStoreError.self) { try SQLiteStatusStore(path: path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("newer") == true)
    }

    @Test func unwritablePathIsRefused() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let blocker = dir.path("not-a-directory")
        try Data("x".utf8).write(to: URL(fileURLWithPath: blocker))
        let error = #expect(throws: StatusStoreError.self) { try SQLiteStatusStore(path: blocker + "/status.db") }
        #expect(error?.code == .unwritable)
        #expect(error?.message.contains(blocker) == true)
        let missing = #expect(throws: StatusStoreError.self) { try SQLiteStatusStore(path: dir.path("no/such/dir/status.db")) }
        #expect(missing?.code == .unwritable)
        let directory = #expect(throws: StatusStoreError.self) { try SQLiteStatusStore(path: dir.url.path) }
        #expect(directory != nil)
    }

    @Test func openingFollowsTheConfiguration() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        var configuration = Configuration()
        configuration.storage.path = nil
        #expect(try StatusStores.open(configuration) is DiscardingStatusStore)
        configuration.storage.path = dir.path("rollcall.db")
        let store = try StatusStores.open(configuration)
        #expect(store is SQLiteStatusStore)
        try (store as? SQLiteStatusStore)?.close()
    }
}
