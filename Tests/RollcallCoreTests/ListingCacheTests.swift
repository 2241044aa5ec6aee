@testable import RollcallCore
import RollcallProtocol
import Testing

/// `getOnlineUsers` pages are shared between callers until the listing changes: a join, a
/// leave or a state change in between is always seen, also in interval mode, where `seq`
/// does not step with each change.
@Suite struct ListingCacheTests {
    @Test func aCachedPageNeverHidesAChange() throws {
        let harness = PresenceHarness()
        var members: [HarnessClient] = []
        for index in 0..<(ListingCache.minimumNames + 10) {
            let client = try harness.login("u\(1000 + index)")
            try client.ok("join", [("channel", "big")])
            members.append(client)
        }
        let observer = try harness.login("observer")
        func page() throws -> JSON {
            try observer.ok("getOnlineUsers", [("channel", "big"), ("pageSize", 1000), ("includeState", true)])
        }
        func users(_ page: JSON) -> [JSON] { page["users"]?.arrayValue ?? [] }

        let first = try page()
        #expect(users(first).count == members.count)
        #expect(try page() == first, "the same listing, read twice")

        try members[3].ok("setState", [("channel", "big"), ("state", ["seat": "A1"])])
        let afterState = try page()
        #expect(users(afterState).first { $0.string("userId") == "u1003" }?["state"] == ["seat": "A1"])

        let late = try harness.login("u0999")
        try late.ok("join", [("channel", "big")])
        let afterJoin = try page()
        #expect(users(afterJoin).first?.string("userId") == "u0999")
        #expect(afterJoin.int("totalOccupancy") == members.count + 1)

        try members[0].ok("leave", [("channel", "big")])
        let afterLeave = try page()
        #expect(!users(afterLeave).contains { $0.string("userId") == "u1000" })
        #expect(afterLeave.int("totalOccupancy") == members.count)
        #expect(try page() == afterLeave)
    }
}
