import Foundation
import Testing
import RollcallCore
@testable import RollcallStorage

/// The webhook events of one node in `storage.path` (PROTOCOL §11 1.2 "Nothing lost"): stored
/// when appended, listed again by a journal opened later on the file (with the same ids), and
/// gone once settled; beside the status store on the same file.
@Suite("SQLite webhook journal")
struct SQLiteWebhookJournalTests {
    @Test func appendedEventsOutliveTheJournalUntilSettled() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let path = directory.path("rollcall.db")
        let status = try SQLiteStatusStore(path: path)
        let first = try SQLiteWebhookJournal(path: path)
        let ids = try first.append((1...3).map { Array("{\"event\":\"e\($0)\"}".utf8) })
        #expect(Set(ids).count == 3)
        #expect(ids.map { $0.hasPrefix(first.journalId + "-w") } == [true, true, true])
        try first.settle([ids[1]])
        first.close()

        let second = try SQLiteWebhookJournal(path: path)
        #expect(second.journalId == first.journalId, "ids stay stable across restarts")
        let left = try second.unsettled()
        #expect(left.map(\.id) == [ids[0], ids[2]])
        #expect(left.map { String(decoding: $0.bytes, as: UTF8.self) } == [#"{"event":"e1"}"#, #"{"event":"e3"}"#])
        try second.settle(left.map(\.id) + ["another-journal-w1"])
        #expect(try second.unsettled().isEmpty)
        let next = try second.append([[]])[0]
        #expect(!ids.contains(next), "numbers are not reused")
        second.close()
        try status.close()
    }
}
