@testable import RollcallCore
import RollcallProtocol
import Testing

/// Roster pages (`getOnlineUsers`, snapshots) are shared between readers until the channel
/// emits its next event: in interval mode that is a whole interval, however many changes
/// wait for it, and a cached page is never older than the last event.
@Suite struct ListingCacheTests {
    /// A channel of `count` members (`u1000`…) in interval mode (maxInstantEvents 3, 1 s),
    /// its first interval event sent.
    private func bigChannel(_ count: Int) throws -> (PresenceHarness, [HarnessClient]) {
        let harness = PresenceHarness {
            $0.presence.maxInstantEvents = 3
            $0.presence.hysteresis = 1
            $0.presence.intervalSeconds = 1
        }
        var members: [HarnessClient] = []
        for index in 0..<count {
            let client = try harness.login("u\(1000 + index)")
            try client.ok("join", [("channel", "big"), ("presence", false)])
            members.append(client)
        }
        harness.advance(seconds: 1)
        return (harness, members)
    }

    @Test func aPageIsEncodedOncePerEventAndNeverOutlivesIt() throws {
        let (harness, members) = try bigChannel(ListingCache.minimumNames + 10)
        let channel = try #require(harness.broker.presence.channels.values.first)
        let observer = try harness.login("observer")
        func page() throws -> JSON {
            try observer.ok("getOnlineUsers", [("channel", "big"), ("pageSize", 1000), ("includeState", true)])
        }
        func users(_ page: JSON) -> [JSON] { page["users"]?.arrayValue ?? [] }

        let first = try page()
        #expect(users(first).count == members.count)
        #expect(channel.listingCache.count == 1)

        // Changes in the interval: the cached page stays, and it is still the right one.
        try members[3].ok("setState", [("channel", "big"), ("state", ["seat": "A1"])])
        let late = try harness.login("u0999")
        try late.ok("join", [("channel", "big"), ("presence", false)])
        try members[0].ok("leave", [("channel", "big")])
        #expect(channel.listingCache.count == 1, "joins, leaves and states in the interval keep the cache")
        #expect(try page() == first)

        // The interval event: the next read shows every change at once.
        harness.advance(seconds: 1)
        #expect(channel.listingCache.count == 0)
        let after = try page()
        #expect(after.int("seq") == first.int("seq")! + 1)
        #expect(users(after).first?.string("userId") == "u0999")
        #expect(!users(after).contains { $0.string("userId") == "u1000" })
        #expect(users(after).first { $0.string("userId") == "u1003" }?["state"] == ["seat": "A1"])
        #expect(after.int("totalOccupancy") == members.count)
    }

    @Test func everyPageOfABigRosterFitsAndTheCacheStaysBounded() throws {
        let (harness, _) = try bigChannel(2600)
        let channel = try #require(harness.broker.presence.channels.values.first)
        let observer = try harness.login("observer")
        var page: JSON = nil
        var pages = 0
        for includeState in [true, false] {
            repeat {
                var arguments: [(String, JSON)] = [("channel", "big"), ("pageSize", 256), ("includeState", .bool(includeState))]
                if let next = page.isNull ? nil : page["nextPage"]?.stringValue { arguments.append(("page", .string(next))) }
                page = try observer.ok("getOnlineUsers", arguments)
                pages += 1
            } while page["nextPage"]?.stringValue != nil
            page = nil
        }
        #expect(pages == 22)
        #expect(channel.listingCache.count == min(20, ListingCache.capacity(occupancy: 2600)))
        // Odd cursors from a hostile reader evict pages, never grow the cache past its bound.
        for index in 0..<100 {
            try observer.ok("getOnlineUsers", [
                ("channel", "big"), ("pageSize", 300), ("page", .string(PageCursor.encode(after: Name(unchecked: "u\(1000 + index)")))),
            ])
        }
        #expect(channel.listingCache.count == ListingCache.capacity(occupancy: 2600))
    }
}

private extension JSON {
    var isNull: Bool { if case .null = self { true } else { false } }
}
