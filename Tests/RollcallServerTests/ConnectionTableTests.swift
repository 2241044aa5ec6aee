@testable import RollcallServer
import RollcallCore
import Testing

@Suite("ConnectionTable")
struct ConnectionTableTests {
    /// A record for the table; its lws pointer is never dereferenced here.
    func record(_ id: UInt64) -> ConnectionRecord {
        ConnectionRecord(id: ConnectionID(id), wsi: OpaquePointer(bitPattern: 0x1000)!, now: 0)
    }

    @Test func heartbeatChecksFallDueEarliestFirstAndAreDisarmedWhenTaken() {
        var table = ConnectionTable()
        table.insert(record(1), firstHeartbeatCheckAt: 300)
        table.insert(record(2), firstHeartbeatCheckAt: 100)
        table.insert(record(3), firstHeartbeatCheckAt: 900)
        #expect(table.count == 3)
        #expect(table.nextHeartbeatCheck() == 100)
        #expect(table.dueForHeartbeatCheck(at: 300).map(\.id.rawValue) == [2, 1])
        #expect(table.nextHeartbeatCheck() == 900)
        table.scheduleHeartbeatCheck(ConnectionID(2), at: 400)
        #expect(table.nextHeartbeatCheck() == 400)
    }

    @Test func removingAConnectionCancelsItsCheck() {
        var table = ConnectionTable()
        table.insert(record(1), firstHeartbeatCheckAt: 100)
        table.insert(record(2), firstHeartbeatCheckAt: 200)
        table.remove(ConnectionID(1))
        #expect(table[ConnectionID(1)] == nil)
        #expect(table.nextHeartbeatCheck() == 200)
        #expect(table.dueForHeartbeatCheck(at: 1000).map(\.id.rawValue) == [2])
        // A check scheduled for a connection already gone is ignored.
        table.remove(ConnectionID(2))
        table.scheduleHeartbeatCheck(ConnectionID(2), at: 50)
        #expect(table.nextHeartbeatCheck() == nil)
        #expect(table.isEmpty)
    }

    @Test func reschedulingReplacesTheArmedCheck() {
        var table = ConnectionTable()
        table.insert(record(1), firstHeartbeatCheckAt: 100)
        table.scheduleHeartbeatCheck(ConnectionID(1), at: 500)
        // The check at 100 was replaced: nothing is due before 500, and 1 falls due once.
        #expect(table.nextHeartbeatCheck() == 500)
        #expect(table.dueForHeartbeatCheck(at: 400).isEmpty)
        #expect(table.dueForHeartbeatCheck(at: 500).map(\.id.rawValue) == [1])
        #expect(table.dueForHeartbeatCheck(at: 10_000).isEmpty)
        #expect(table.nextHeartbeatCheck() == nil)
        #expect(table.count == 1)
    }

    @Test func removeAllForgetsConnectionsAndChecks() {
        var table = ConnectionTable()
        table.insert(record(1), firstHeartbeatCheckAt: 100)
        table.removeAll()
        #expect(table.isEmpty)
        #expect(table.nextHeartbeatCheck() == nil)
    }

    @Test func keysAreNeverHandedOutTwice() {
        var table = ConnectionTable()
        let keys = (0..<100).map { _ in table.newKey() }
        #expect(Set(keys).count == 100)
        #expect(!keys.contains(0))  // 0 is lws' "no key yet"
    }
}
