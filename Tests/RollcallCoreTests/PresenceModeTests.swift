@testable import RollcallCore
import RollcallClient
import RollcallProtocol
import Testing

/// Announce ↔ interval: thresholds, hysteresis, net changes, snapshots in interval mode.
@Suite struct PresenceModeTests {
    /// maxInstantEvents 3, hysteresis 1 (back to announce at 2), interval 1 s, hold 0.5 s.
    private func makeHarness(snapshotMax: Int = 1000) -> PresenceHarness {
        PresenceHarness {
            $0.presence.maxInstantEvents = 3
            $0.presence.hysteresis = 1
            $0.presence.intervalSeconds = 1
            $0.presence.timeoutSeconds = 0.5
            $0.presence.snapshotMaxMembers = snapshotMax
        }
    }

    private func join(_ harness: PresenceHarness, _ users: [String], state: JSON? = nil) throws -> [HarnessClient] {
        try users.map { user in
            let client = try harness.login(user)
            var arguments: [(String, JSON)] = [("channel", "room")]
            if let state { arguments.append(("state", state)) }
            try client.ok("join", arguments)
            return client
        }
    }

    private func onlineUsers(_ client: HarnessClient) throws -> [String: [String: String]] {
        let result = try client.ok("getOnlineUsers", [("channel", "room"), ("includeState", true), ("pageSize", 1000)])
        var map: [String: [String: String]] = [:]
        for user in result["users"]?.arrayValue ?? [] { map[user.string("userId") ?? "?"] = user["state"]?.stringMap }
        return map
    }

    @Test func theJoinAboveTheThresholdStartsIntervalMode() throws {
        let harness = makeHarness()
        let first = try join(harness, ["u1", "u2", "u3"])
        for client in first { _ = client.events() }
        let u4 = try harness.login("u4")
        #expect(try u4.ok("join", [("channel", "room")]) == ["occupancy": 4, "mode": "interval"])
        #expect(first[0].events().isEmpty)
        let snapshot = u4.events()
        #expect(snapshot.first?.string("mode") == "interval")
        #expect(snapshot.first?.int("occupancy") == 4)
        #expect(snapshot.first?.int("seq") == 3)
        #expect(snapshot.first?["snapshot"]?.arrayValue?.count == 4)
        #expect(harness.broker.nextDeadline == harness.clock.monotonic + 1000)

        harness.advance(seconds: 0.999)
        #expect(first[0].events().isEmpty)
        harness.advance(seconds: 0.001)
        let expected: JSON = [
            "event": "presence", "type": "interval", "channel": "room", "channelType": "message",
            "interval": ["join": ["u4"], "leave": [], "timeout": [], "stateChanged": []],
            "occupancy": 4, "mode": "interval", "seq": 4, "timestamp": .int(Int(harness.clock.now)),
        ]
        for client in first + [u4] { #expect(client.events() == [expected]) }
        // Nothing changed: no event, no timer.
        #expect(harness.broker.presence.nextDeadline == nil)
        harness.advance(seconds: 5)
        #expect(first[0].events().isEmpty)
    }

    @Test func intervalEventsCarryTheNetChange() throws {
        let harness = makeHarness()
        let clients = try join(harness, ["u1", "u2", "u3", "u4"])
        harness.advance(seconds: 1)
        for client in clients { _ = client.events() }
        let channel = try #require(harness.broker.presence.channels[ChannelKey(type: .message, name: Name(unchecked: "room"))])
        #expect(channel.pending.isEmpty)

        // Joined and left inside the interval: nowhere.
        let brief = try harness.login("u5")
        try brief.ok("join", [("channel", "room"), ("state", ["a": "1"])])
        try brief.ok("leave", [("channel", "room")])
        // Joined with a state and stayed: join + stateChanged.
        let u6 = try harness.login("u6")
        try u6.ok("join", [("channel", "room"), ("state", ["a": "1"])])
        // Changed and changed back: nothing.
        try clients[1].ok("setState", [("channel", "room"), ("state", ["t": "x"])])
        try clients[1].ok("removeState", [("channel", "room"), ("keys", ["t"])])
        // Changed twice: the latest full state.
        try clients[2].ok("setState", [("channel", "room"), ("state", ["t": "x", "z": "0"])])
        try clients[2].ok("setState", [("channel", "room"), ("state", ["t": "y"])])
        // Dropped and held past its timeout: timeout.
        clients[3].drop()
        harness.advance(seconds: 0.6)
        #expect(clients[0].events().isEmpty)
        #expect(channel.pending.count == 5)
        harness.advance(seconds: 0.4)
        let events = clients[0].events()
        #expect(events.count == 1)
        #expect(events.first?["interval"] == [
            "join": ["u6"], "leave": [], "timeout": ["u4"],
            "stateChanged": [["userId": "u3", "state": ["t": "y", "z": "0"]], ["userId": "u6", "state": ["a": "1"]]],
        ])
        #expect(events.first?.int("occupancy") == 4)
        #expect(events.first?.int("seq") == 5)
        // Left and came back: nothing, or only the state difference.
        try clients[1].ok("leave", [("channel", "room")])
        let u2again = try harness.login("u2")
        try u2again.ok("join", [("channel", "room"), ("state", ["back": "yes"])])
        harness.advance(seconds: 1)
        #expect(clients[0].events().map { $0["interval"] } == [[
            "join": [], "leave": [], "timeout": [], "stateChanged": [["userId": "u2", "state": ["back": "yes"]]],
        ]])
        // Leave wins over an earlier timeout of the same user when both happened.
        #expect(harness.broker.presence.channels.count == 1)
    }

    @Test func hysteresisFlushesThenReturnsToAnnounce() throws {
        let harness = makeHarness()
        let clients = try join(harness, ["u1", "u2", "u3", "u4"])  // interval from u4 on
        harness.advance(seconds: 1)
        let watcher = clients[0]
        _ = watcher.events()
        try clients[3].ok("leave", [("channel", "room")])  // 3: still interval (3 > 2)
        #expect(watcher.events().isEmpty)
        // Listings show the roster as of the last event: u4's leave waits for the next one.
        #expect(try clients[2].ok("getOnlineUsers", [("channel", "room"), ("includeUserId", false)])["totalOccupancy"] == 4)
        try clients[2].ok("leave", [("channel", "room")])  // 2 ≤ 3 − 1: flush, then announce
        let flushed = watcher.events()
        #expect(flushed.count == 1)
        #expect(flushed.first?.string("type") == "interval")
        #expect(flushed.first?.string("mode") == "interval")
        #expect(flushed.first?["interval"]?["leave"] == ["u3", "u4"])
        #expect(flushed.first?.int("occupancy") == 2)
        #expect(harness.broker.presence.nextDeadline == nil)
        let u5 = try harness.login("u5")
        #expect(try u5.ok("join", [("channel", "room")]) == ["occupancy": 3, "mode": "announce"])
        let announced = watcher.events()
        #expect(announced.map { $0.string("type") } == ["join"])
        #expect(announced.first?.string("mode") == "announce")
        #expect(announced.first?.int("seq") == (flushed.first?.int("seq")).map { $0 + 1 })
        // At exactly maxInstantEvents it stays in announce; one more switches.
        let u6 = try harness.login("u6")
        #expect(try u6.ok("join", [("channel", "room")]) == ["occupancy": 4, "mode": "interval"])
        #expect(watcher.events().isEmpty)
        harness.advance(seconds: 1)
        #expect(watcher.events().map { $0["interval"]?["join"] } == [["u6"]])
    }

    @Test func theSwitchBackEventCarriesTheChangeThatCausedIt() throws {
        let harness = makeHarness()
        let clients = try join(harness, ["u1", "u2", "u3", "u4"])
        harness.advance(seconds: 1)
        _ = clients[0].events()
        clients[3].close()
        clients[2].close()
        let events = clients[0].events()
        #expect(events.count == 1)
        #expect(events.first?["interval"]?["leave"] == ["u3", "u4"])
        clients[1].close()
        #expect(clients[0].events().map { $0.string("type") } == ["leave"])
    }

    @Test func aSnapshotInIntervalModeShowsTheRosterOfTheLastEventPlusTheJoiner() throws {
        let harness = makeHarness()
        let clients = try join(harness, ["u1", "u2", "u3", "u4"], state: ["v": "0"])
        harness.advance(seconds: 1)
        for client in clients { _ = client.events() }
        try clients[1].ok("setState", [("channel", "room"), ("state", ["v": "new"])])
        try clients[2].ok("leave", [("channel", "room")])
        let u5 = try harness.login("u5")
        try u5.ok("join", [("channel", "room")])
        let u6 = try harness.login("u6")
        try u6.ok("join", [("channel", "room"), ("state", ["me": "6"])])
        let snapshot = try #require(u6.events().first)
        #expect(snapshot["snapshot"] == [
            ["userId": "u1", "state": ["v": "0"]], ["userId": "u2", "state": ["v": "0"]],
            ["userId": "u3", "state": ["v": "0"]], ["userId": "u4", "state": ["v": "0"]],
            ["userId": "u6", "state": ["me": "6"]],
        ])
        #expect(snapshot.int("occupancy") == 5)
        #expect(snapshot.int("seq") == 4)
        var roster = Roster(of: snapshot)
        var problems = roster.applyChecked(snapshot, viewer: "u6")
        harness.advance(seconds: 1)
        for event in u6.events() { problems += roster.applyChecked(event, viewer: "u6") }
        #expect(problems.isEmpty)
        #expect(roster.statesByUser == (try onlineUsers(u6)))
    }

    @Test func aLargeSnapshotIsTruncatedWithACursor() throws {
        let harness = makeHarness(snapshotMax: 2)
        _ = try join(harness, ["a", "b", "c"])
        let d = try harness.login("d")
        try d.ok("join", [("channel", "room")])
        let snapshot = try #require(d.events().first)
        #expect(snapshot["snapshot"]?.arrayValue?.compactMap { $0.string("userId") } == ["a", "b"])
        #expect(snapshot["truncated"] == true)
        #expect(snapshot.int("occupancy") == 4)
        let page = try #require(snapshot["nextPage"])
        let rest = try d.ok("getOnlineUsers", [("channel", "room"), ("page", page)])
        #expect(rest["users"] == [["userId": "c"], ["userId": "d"]])
        #expect(rest["nextPage"] == .null)
        // Small enough: not truncated.
        let small = makeHarness(snapshotMax: 2)
        let pair = try join(small, ["a", "b"])
        #expect(pair[1].events().first?["truncated"] == nil)
    }

    @Test func intervalWorkFollowsChangesNotOccupancy() throws {
        let harness = PresenceHarness {
            $0.presence.maxInstantEvents = 10
            $0.presence.hysteresis = 2
            $0.presence.intervalSeconds = 1
        }
        harness.broker.presence.memberChunkCapacity = 16
        var clients: [HarnessClient] = []
        for i in 0..<400 {
            let client = try harness.login("user\(paddedNumber(i))")
            try client.ok("join", [("channel", "big"), ("presence", .bool(i < 3))])
            clients.append(client)
        }
        harness.advance(seconds: 1)
        let key = ChannelKey(type: .message, name: Name(unchecked: "big"))
        let channel = try #require(harness.broker.presence.channels[key])
        #expect(channel.mode == .interval)
        #expect(channel.pending.isEmpty)
        #expect(harness.broker.presence.nextDeadline == nil)
        #expect(channel.order.chunks.count > 10)
        try clients[200].ok("setState", [("channel", "big"), ("state", ["k": "v"])])
        #expect(channel.pending.count == 1)
        _ = clients[0].events()
        harness.advance(seconds: 1)
        #expect(clients[0].events().map { $0["interval"]?["stateChanged"] } == [[["userId": "user200", "state": ["k": "v"]]]])
        let page = try clients[0].ok("getOnlineUsers", [("channel", "big"), ("pageSize", 3), ("page", .string(PageCursor.encode(after: Name(unchecked: "user100"))))])
        #expect(page["users"] == [["userId": "user101"], ["userId": "user102"], ["userId": "user103"]])
    }
}
