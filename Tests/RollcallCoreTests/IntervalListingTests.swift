@testable import RollcallCore
import RollcallClient
import RollcallProtocol
import Testing

/// In interval mode `getOnlineUsers` shows the roster as of the channel's last event, like
/// the snapshot (PROTOCOL §4): a page agrees with its `seq`, a client completing a truncated
/// snapshot with pages stays exact, and the reader's own user is shown as in its snapshot.
/// Announce mode lists every change at once (each one is an event).
@Suite struct IntervalListingTests {
    /// maxInstantEvents 3, hysteresis 1, interval 1 s; snapshots cut at `snapshotMax`.
    private func makeHarness(snapshotMax: Int = 1000) -> PresenceHarness {
        PresenceHarness {
            $0.presence.maxInstantEvents = 3
            $0.presence.hysteresis = 1
            $0.presence.intervalSeconds = 1
            $0.presence.snapshotMaxMembers = snapshotMax
        }
    }

    private func join(_ harness: PresenceHarness, _ users: [String], presence: Bool = false) throws -> [HarnessClient] {
        try users.map { user in
            let client = try harness.login(user)
            try client.ok("join", [("channel", "room"), ("presence", .bool(presence))])
            return client
        }
    }

    /// Every page of `getOnlineUsers` (pages of `pageSize`, with states): users → state,
    /// and the `seq` and `totalOccupancy` of each page.
    private func listing(_ reader: HarnessClient, pageSize: Int = 2) throws -> (users: [String: [String: String]], seqs: Set<Int>, totals: Set<Int>) {
        var users: [String: [String: String]] = [:]
        var seqs: Set<Int> = [], totals: Set<Int> = []
        var next: String?
        repeat {
            var arguments: [(String, JSON)] = [("channel", "room"), ("includeState", true), ("pageSize", .int(pageSize))]
            if let next { arguments.append(("page", .string(next))) }
            let page = try reader.ok("getOnlineUsers", arguments)
            for entry in page["users"]?.arrayValue ?? [] {
                #expect(users[entry.string("userId") ?? "?"] == nil, "listed twice")
                users[entry.string("userId") ?? "?"] = entry["state"]?.stringMap ?? [:]
            }
            seqs.insert(page.int("seq") ?? -1)
            totals.insert(page.int("totalOccupancy") ?? -1)
            next = page["nextPage"]?.stringValue
        } while next != nil
        return (users, seqs, totals)
    }

    @Test func pagesShowTheRosterAsOfTheLastEventUntilTheNextOne() throws {
        let harness = makeHarness()
        let members = try join(harness, ["u1", "u2", "u3", "u4", "u5"])
        try members[1].ok("setState", [("channel", "room"), ("state", ["seat": "A1"])])
        harness.advance(seconds: 1)
        let observer = try harness.login("observer")
        let atEvent = try listing(observer)
        #expect(Set(atEvent.users.keys) == ["u1", "u2", "u3", "u4", "u5"])
        #expect(atEvent.totals == [5])

        // Pending: a join, a leave, a state change, a join-and-leave.
        _ = try join(harness, ["u0"])
        try members[2].ok("leave", [("channel", "room")])
        try members[1].ok("setState", [("channel", "room"), ("state", ["seat": "B2"])])
        let passer = try join(harness, ["u35"])[0]
        try passer.ok("leave", [("channel", "room")])
        let during = try listing(observer)
        #expect(during.users == atEvent.users, "nothing pending is shown yet")
        #expect(during.seqs == atEvent.seqs)
        #expect(during.totals == [5])
        #expect(try observer.ok("getOnlineUsers", [("channel", "room"), ("includeUserId", false)])["totalOccupancy"] == 5)

        // Listing + the next event = the roster after it.
        let watcher = try harness.login("watcher")
        try watcher.ok("join", [("channel", "room"), ("presence", true)])
        _ = watcher.events()
        harness.advance(seconds: 1)
        let event = try #require(watcher.presenceEvents().first)
        #expect(event.int("seq") == during.seqs.first! + 1)
        var roster = during.users
        for user in event["interval"]?["join"]?.arrayValue ?? [] { roster[user.stringValue ?? "?"] = [:] }
        for user in event["interval"]?["leave"]?.arrayValue ?? [] { roster[user.stringValue ?? "?"] = nil }
        for change in event["interval"]?["stateChanged"]?.arrayValue ?? [] {
            roster[change.string("userId") ?? "?"] = change["state"]?.stringMap ?? [:]
        }
        let after = try listing(observer)
        #expect(roster == after.users)
        #expect(after.users["u2"] == ["seat": "B2"])
        #expect(after.users["u35"] == nil && after.users["u3"] == nil && after.users["u0"] == [:])
    }

    @Test func aUserWhoJoinsAndLeavesBetweenEventsIsNoGhostInAPagedRoster() throws {
        let harness = makeHarness(snapshotMax: 2)
        _ = try join(harness, ["u1", "u2", "u3", "u5", "u6"])
        harness.advance(seconds: 1)
        // A late joiner gets a truncated snapshot and pages the rest...
        let reader = try harness.login("reader")
        try reader.ok("join", [("channel", "room")])
        let snapshot = try #require(reader.presenceEvents().first)
        var roster = Roster(of: snapshot)
        var outcome = roster.apply(Event(snapshot.objectValue!))
        // ...while u4 joins after the last event, sits on the page being read, and leaves.
        let ghost = try join(harness, ["u4"])[0]
        while case .fetchPage(let page) = outcome {
            let reply = try reader.ok("getOnlineUsers", [("channel", "room"), ("includeState", true), ("pageSize", 2), ("page", .string(page))])
            #expect(reply.int("seq") == roster.seq)
            outcome = roster.merge(page: reply["users"]?.arrayValue ?? [], nextPage: reply["nextPage"]?.stringValue)
        }
        #expect(!roster.statesByUser.keys.contains("u4"), "u4 is not in the roster as of the last event")
        #expect(roster.statesByUser.keys.contains("reader"), "the reader's own user is shown, as in its snapshot")
        try ghost.ok("leave", [("channel", "room")])
        harness.advance(seconds: 1)
        for event in reader.presenceEvents() { roster.apply(Event(event.objectValue!)) }
        let truth = try listing(try harness.login("observer"))
        #expect(roster.statesByUser == truth.users)
    }

    @Test func theReadersOwnJoinIsShownAsInItsSnapshot() throws {
        let harness = makeHarness()
        _ = try join(harness, ["u1", "u2", "u3", "u4"])
        harness.advance(seconds: 1)
        let joiner = try harness.login("u25")
        try joiner.ok("join", [("channel", "room"), ("presence", false), ("state", ["me": "1"])])
        let own = try listing(joiner, pageSize: 1)
        #expect(Set(own.users.keys) == ["u1", "u2", "u25", "u3", "u4"])
        #expect(own.users["u25"] == ["me": "1"])
        #expect(own.totals == [5])
        let other = try listing(try harness.login("other"), pageSize: 1)
        #expect(Set(other.users.keys) == ["u1", "u2", "u3", "u4"])
        #expect(other.totals == [4])
        // Sorting after the last page, the joiner ends the listing.
        let last = try harness.login("u9")
        try last.ok("join", [("channel", "room"), ("presence", false)])
        let tail = try listing(last, pageSize: 2)
        #expect(Set(tail.users.keys) == ["u1", "u2", "u3", "u4", "u9"])
        // The server API has no reader: the roster as of the last event.
        let api = harness.api("getOnlineUsers", ["channel": "room"]).body["result"]
        #expect(api?.int("totalOccupancy") == 4)
    }

    @Test func announceModeListsEachChangeAtOnce() throws {
        let harness = makeHarness()
        let members = try join(harness, ["u1", "u2"])
        let observer = try harness.login("observer")
        #expect(try listing(observer).users == ["u1": [:], "u2": [:]])
        try members[0].ok("setState", [("channel", "room"), ("state", ["k": "v"])])
        _ = try join(harness, ["u3"])
        try members[1].ok("leave", [("channel", "room")])
        let now = try listing(observer)
        #expect(now.users == ["u1": ["k": "v"], "u3": [:]])
        #expect(now.totals == [2])
        #expect(now.seqs == [5])
    }
}
