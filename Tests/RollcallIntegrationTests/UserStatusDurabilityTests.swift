import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// Issue 4, durability: user status in a real SQLite file (`storage.path`) across a graceful
/// restart (SIGTERM), a crash (`kill -9`), and refusals of unusable files.
@Suite("User status durability")
struct UserStatusDurabilityTests {
    /// What the first broker stored, to compare after the restart.
    struct Stored {
        let expiresAt: Int
        let bob: JSON
        let carol: JSON
    }

    /// alice subscribes to bob and carol for an hour; bob is online (ios) with a custom status;
    /// carol set a custom status and logged out.
    func populate(_ broker: BrokerProcess) throws -> (Stored, bob: RollcallConnection) {
        let alice = try broker.session("alice", platform: "web")
        let subscribed = try alice.subscribe(["bob", "carol"], duration: 3600)
        #expect(subscribed.failures.isEmpty, "\(subscribed)")
        let carol = try broker.session("carol", platform: "android", customStatus: "Gone fishing")
        #expect(try carol.request("logout").ok)
        let bob = try broker.session("bob", platform: "ios", customStatus: "Lunch")
        #expect(try alice.request("logout").ok)
        let watcher = try broker.session("dave", platform: "cli")
        let listed = try watcher.request("getUserStatus", ["userIds": ["bob", "carol"]])
        let aliceAgain = try broker.session("alice", platform: "web")
        let subscriptions = try aliceAgain.request("getSubscriptions", ["userIds": ["bob"]])
        let expiry = try #require(subscriptions["subscriptions"]?.arrayValue?.first?.integer("expiresAt"), "\(subscriptions)")
        #expect(try aliceAgain.request("logout").ok)
        #expect(try watcher.request("logout").ok)
        return (Stored(expiresAt: expiry, bob: try #require(listed.status(of: "bob")),
                       carol: try #require(listed.status(of: "carol"))), bob)
    }

    /// Starts a second broker on the same file and checks what the first one stored.
    func checkAfterRestart(storagePath: String, stored: Stored) throws {
        let broker = try BrokerProcess(config: ["storage": ["path": storagePath]])
        let dave = try broker.session("dave", platform: "cli")
        let reply = try dave.request("getUserStatus", ["userIds": ["bob", "carol"]])
        #expect(reply.ok, "\(reply)")
        let bob = try #require(reply.status(of: "bob"))
        #expect(bob.statusText == "offline", "bob was online when the broker stopped: \(bob)")
        #expect(bob.platformList.isEmpty)
        #expect(bob.customStatusText == "Lunch")
        #expect(bob.integer("lastCustomStatusUpdateTime") == stored.bob.integer("lastCustomStatusUpdateTime"))
        #expect((bob.integer("lastOnlineStatusUpdateTime") ?? 0) >= (stored.bob.integer("lastOnlineStatusUpdateTime") ?? .max))
        let carol = try #require(reply.status(of: "carol"))
        #expect(carol == stored.carol, "carol's record is kept exactly")

        let alice = try broker.session("alice", platform: "web")
        let subscriptions = try alice.request("getSubscriptions")
        let entries = subscriptions["subscriptions"]?.arrayValue ?? []
        #expect(entries.map { $0.userIdText } == ["bob", "carol"], "\(subscriptions)")
        #expect(entries.first?.integer("expiresAt") == stored.expiresAt, "expiry survives")
        #expect(entries.first?["status"]?.statusText == "offline")
        // The restored subscription is live: bob coming back reaches alice.
        let bobAgain = try broker.session("bob", platform: "web")
        _ = try alice.waitForStatus(of: "bob") { $0.statusText == "online" && $0.platformList == ["web"] }
        _ = bobAgain
    }

    @Test("SIGTERM: subscriptions, custom statuses and times survive; exit 0 within 2 s; online reads offline")
    func gracefulRestart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollcall.db")
        let first = try BrokerProcess(config: ["storage": ["path": path]])
        let (stored, bob) = try populate(first)
        #expect(bob.isOpen)
        let exit = try #require(first.stop(timeout: 5), "broker did not exit")
        #expect(!exit.signaled)
        #expect(exit.status == 0, "stderr: \(first.stderrText)")
        #expect(exit.seconds < 2, "exit took \(exit.seconds) s")
        #expect(try bob.waitForClose(timeout: .seconds(3)).code == 1001)
        try checkAfterRestart(storagePath: path, stored: stored)
    }

    @Test("kill -9 after the write-behind commit: committed data is there, online reads offline")
    func crashRestart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollcall.db")
        let first = try BrokerProcess(config: ["storage": ["path": path]])
        let (stored, bob) = try populate(first)
        #expect(bob.isOpen)
        // Changes are committed within 1 s; wait for them to be visible in the file.
        if SQLiteShell.isAvailable {
            let committed = eventually(timeout: 10) {
                SQLiteShell.query(path, "SELECT custom_status FROM user_status WHERE user_id = 'bob'") == "Lunch"
                    && SQLiteShell.query(path, "SELECT count(*) FROM subscription WHERE subscriber = 'alice'") == "2"
                    && SQLiteShell.query(path, "SELECT status FROM user_status WHERE user_id = 'carol'") == "loggedOut"
            }
            #expect(committed, "the write-behind commit did not reach the file within 10 s")
        } else {
            Thread.sleep(forTimeInterval: 1.5) // the contract: anything older than 1 s is committed
        }
        first.kill()
        #expect(!first.isRunning)
        try checkAfterRestart(storagePath: path, stored: stored)
    }

    @Test("the cap's earliest-made order survives a restart")
    func capOrderSurvivesRestart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollcall.db")
        let config: [String: Any] = ["storage": ["path": path], "userStatus": ["maxSubscriptionsPerUser": 2]]
        let first = try BrokerProcess(config: config)
        let alice = try first.session("alice", platform: "web")
        // Made in the order zed, amy (byte order is the reverse); amy renewed later.
        #expect(try alice.subscribe(["zed"]).ok)
        #expect(try alice.subscribe(["amy"]).ok)
        #expect(try alice.subscribe(["zed"], duration: 600).ok)
        _ = try #require(first.stop(), "broker did not exit")

        let second = try BrokerProcess(config: config)
        let again = try second.session("alice", platform: "web")
        #expect(try again.subscribe(["bob"]).ok)
        let event = try again.waitForSubscriptionsEvent()
        #expect(event.added == ["bob"])
        #expect(event.removed == ["zed"], "zed was made first, renewal and restart notwithstanding")
    }

    @Test("the database is in WAL mode", .enabled(if: SQLiteShell.isAvailable))
    func walMode() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollcall.db")
        let broker = try BrokerProcess(config: ["storage": ["path": path]])
        #expect(SQLiteShell.query(path, "PRAGMA journal_mode") == "wal")
        let versions = SQLiteShell.query(path, "SELECT count(*) FROM grdb_migrations")
        #expect(versions.flatMap { Int($0) } ?? 0 >= 1, "schema versioned with migrations")
        _ = broker.stop()
    }

    @Test("a corrupt database file stops the broker at start with a message naming the file")
    func corruptFileRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollcall.db")
        var garbage = Array("this is not a SQLite database, just garbage\n".utf8)
        while garbage.count < 16_384 { garbage += garbage }
        try Data(garbage).write(to: URL(fileURLWithPath: path))
        let result = try #require(try BrokerProcess.runExpectingExit(config: ["storage": ["path": path]]),
                                  "the broker started on a corrupt file")
        #expect(result.status != 0)
        #expect(result.stderr.contains(path), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(garbage), "the file is left as it was")
    }

    @Test("a database header with a damaged page stops the broker at start")
    func damagedDatabaseRefused() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rollcall.db")
        let first = try BrokerProcess(config: ["storage": ["path": path]])
        _ = try first.session("alice", platform: "web")
        _ = try #require(first.stop())
        // Keep the SQLite header, overwrite everything after it.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.count > 200)
        for index in 100..<bytes.count { bytes[index] = 0xA5 }
        try bytes.write(to: URL(fileURLWithPath: path))
        try? FileManager.default.removeItem(atPath: path + "-wal")
        try? FileManager.default.removeItem(atPath: path + "-shm")
        let result = try #require(try BrokerProcess.runExpectingExit(config: ["storage": ["path": path]]),
                                  "the broker started on a damaged file")
        #expect(result.status != 0)
        #expect(result.stderr.contains(path), "\(result.stderr)")
    }

    @Test("an unusable storage path (a directory) stops the broker at start with a message naming it")
    func unwritablePathRefused() throws {
        let directory = try TemporaryDirectory()
        let result = try #require(try BrokerProcess.runExpectingExit(config: ["storage": ["path": directory.url.path]]),
                                  "the broker started on a directory")
        #expect(result.status != 0)
        #expect(result.stderr.contains(directory.url.path), "\(result.stderr)")
        let missingParent = directory.path("no/such/dir/rollcall.db")
        let second = try #require(try BrokerProcess.runExpectingExit(config: ["storage": ["path": missingParent]]))
        #expect(second.status != 0)
        #expect(second.stderr.contains(missingParent), "\(second.stderr)")
    }
}
