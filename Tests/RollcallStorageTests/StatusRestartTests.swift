import Foundation
import Testing
@testable import RollcallCore
import RollcallProtocol
import RollcallStorage

/// The engine and the SQLite store together: what one broker wrote, the next one reads.
@Suite("User status across a restart (SQLite)")
struct StatusRestartTests {
    private func login(_ broker: Broker, _ connection: UInt64, _ userId: String, customStatus: String? = nil) {
        let id = ConnectionID(connection)
        _ = broker.handle(.opened(id))
        var frame = #"{"id":1,"op":"login","userId":"\#(userId)""#
        if let customStatus { frame += #","customStatus":"\#(customStatus)""# }
        frame += "}"
        _ = broker.handle(.received(id, Array(frame.utf8)))
    }

    private func request(_ broker: Broker, _ connection: UInt64, _ frame: String) -> [Action] {
        broker.handle(.received(ConnectionID(connection), Array(frame.utf8)))
    }

    private var configuration: Configuration {
        var configuration = Configuration()
        configuration.storage.path = nil
        return configuration
    }

    @Test func cleanShutdownThenRestart() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("rollcall.db")
        let clock = ManualClock()
        do {
            let store = try SQLiteStatusStore(path: path, clock: clock)
            let broker = Broker(configuration: configuration, clock: clock, store: store)
            login(broker, 1, "alice")
            login(broker, 2, "bob", customStatus: "Gone fishing")
            _ = request(broker, 1, #"{"id":2,"op":"subscribeUserStatus","userIds":["bob"],"duration":3600}"#)
            clock.advance(bySeconds: 10)
            _ = broker.handle(.shutdown)
            #expect(broker.userStatus.lastFlushError == nil)
            #expect(store.pendingCount == 0)
            try store.close()
        }
        clock.advance(bySeconds: 5)
        let store = try SQLiteStatusStore(path: path, clock: clock)
        defer { try? store.close() }
        let broker = Broker(configuration: configuration, clock: clock, store: store)
        let bob = broker.userStatus.record(of: Name("bob")!)
        #expect(bob.stored.status == .offline)
        #expect(bob.stored.customStatus == "Gone fishing")
        #expect(bob.stored.lastOnlineStatusUpdateTime == clock.now - 5_000)
        #expect(broker.userStatus.subscriptionCount == 1)
        // Alice's catch-up on her next login: nothing changed since her session ended.
        let actions = { () -> [Action] in
            _ = broker.handle(.opened(ConnectionID(9)))
            return broker.handle(.received(ConnectionID(9), Array(#"{"id":1,"op":"login","userId":"alice"}"#.utf8)))
        }()
        #expect(actions.count == 1)
    }

    @Test func crashLeavesOnlineUsersOfflineAsOfTheLastCommit() throws {
        let dir = try TemporaryDirectory()
        defer { dir.cleanUp() }
        let path = dir.path("rollcall.db")
        let clock = ManualClock()
        let crashed = try SQLiteStatusStore(path: path, clock: clock)
        let broker = Broker(configuration: configuration, clock: clock, store: crashed)
        login(broker, 1, "alice", customStatus: "Here")
        login(broker, 2, "bob")
        _ = request(broker, 2, #"{"id":2,"op":"subscribeUserStatus","userIds":["alice"]}"#)
        clock.advance(bySeconds: 3)
        // The background writer commits on its own (no flush, no shutdown: a kill -9).
        let deadline = Date(timeIntervalSinceNow: 2)
        while crashed.pendingCount > 0 && Date() < deadline { usleep(10_000) }
        #expect(crashed.pendingCount == 0)
        let committedAt = clock.now
        clock.advance(bySeconds: 60)

        let store = try SQLiteStatusStore(path: path, clock: clock)
        defer { try? store.close(); try? crashed.close() }
        let restarted = Broker(configuration: configuration, clock: clock, store: store)
        let alice = restarted.userStatus.record(of: Name("alice")!)
        #expect(alice.stored.status == .offline)
        #expect(alice.stored.customStatus == "Here")
        #expect(alice.stored.lastOnlineStatusUpdateTime >= committedAt - 3_000)
        #expect(alice.stored.lastOnlineStatusUpdateTime <= committedAt)
        #expect(restarted.userStatus.subscriptionCount == 1)
    }
}
