@testable import RollcallCore
import RollcallProtocol
import Testing

/// `presence.snapshotMaxMembers` exactly at the limit and one past it (docs/security.md).
@Suite struct SnapshotLimitTests {
    /// The snapshot a joiner gets in a channel that already holds `others` members (max 3).
    private func snapshot(afterJoining others: Int) throws -> JSON {
        let harness = PresenceHarness { $0.presence.snapshotMaxMembers = 3 }
        for index in 0..<others {
            try harness.login("u\(index)").ok("join", [("channel", "room")])
        }
        let joiner = try harness.login("zed")
        try joiner.ok("join", [("channel", "room")])
        return try #require(joiner.events().first { $0.string("type") == "snapshot" })
    }

    @Test func exactlySnapshotMaxMembersIsListedWhole() throws {
        let event = try snapshot(afterJoining: 2)
        #expect(event["snapshot"]?.arrayValue?.count == 3)
        #expect(event["truncated"] == nil)
        #expect(event["nextPage"] == nil)
    }

    @Test func oneMemberPastTheLimitIsTruncatedWithACursor() throws {
        let event = try snapshot(afterJoining: 3)
        #expect(event["snapshot"]?.arrayValue?.compactMap { $0.string("userId") } == ["u0", "u1", "u2"])
        #expect(event["truncated"] == true)
        #expect(event.int("occupancy") == 4)
        #expect(event["nextPage"]?.stringValue != nil)
    }
}
