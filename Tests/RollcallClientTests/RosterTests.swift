import RollcallClient
import RollcallProtocol
import Testing

/// A presence event of channel `room` as the broker writes it.
private func presence(_ type: String, seq: Int, _ members: [(String, JSON)] = []) -> Event {
    var object = JSONObject([("event", "presence"), ("type", .string(type)), ("channel", "room"),
                             ("channelType", "message"), ("mode", "announce"), ("seq", .int(seq))])
    for (key, value) in members { object[key] = value }
    return Event(object)
}

private func entry(_ id: String, _ state: JSON = [:]) -> JSON { ["userId": .string(id), "state": state] }

@Suite struct RosterTests {
    @Test func aSnapshotReplacesTheRosterAndEventsEditIt() {
        var roster = Roster(channel: "room")
        #expect(roster.apply(presence("snapshot", seq: 3, [("snapshot", [entry("a", ["k": "1"]), entry("me")]), ("occupancy", 2)])) == .applied)
        #expect(roster.sortedMembers.map(\.userId) == ["a", "me"])
        #expect(roster.members["a"]?.state == ["k": "1"])
        #expect(roster.occupancy == 2)
        var changes: [RosterChange] = []
        roster.apply(presence("join", seq: 4, [("publisher", "b"), ("state", ["x": "y"]), ("info", ["name": "Bo"])])) { changes.append($0) }
        roster.apply(presence("stateChanged", seq: 5, [("publisher", "a"), ("state", ["k": "2"])])) { changes.append($0) }
        roster.apply(presence("leave", seq: 6, [("publisher", "a")])) { changes.append($0) }
        roster.apply(presence("timeout", seq: 7, [("publisher", "b")])) { changes.append($0) }
        #expect(changes == [.joined("b"), .stateChanged("a"), .left("a"), .timedOut("b")])
        #expect(roster.sortedMembers.map(\.userId) == ["me"])
        #expect(roster.seq == 7)
        #expect(!roster.isStale)
        // A second snapshot replaces everything.
        roster.apply(presence("snapshot", seq: 9, [("snapshot", [entry("z")])]))
        #expect(roster.sortedMembers == [RosterMember(userId: "z")])
    }

    @Test func joinCarriesStateAndInfo() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 1, [("snapshot", [])]))
        roster.apply(presence("join", seq: 2, [("publisher", "b"), ("state", ["x": "y"]), ("info", ["name": "Bo"])]))
        #expect(roster.members["b"] == RosterMember(userId: "b", state: ["x": "y"], info: ["name": "Bo"]))
    }

    @Test func otherChannelsAndEventsAreIgnored() {
        var roster = Roster(channel: "room")
        #expect(roster.apply(Event(["event": "message", "channel": "room"])) == .ignored)
        #expect(roster.apply(Event(["event": "presence", "type": "join", "channel": "hall", "seq": 1, "publisher": "x"])) == .ignored)
        #expect(roster.apply(Event(["event": "presence", "type": "join", "channel": "room", "channelType": "stream",
                                    "seq": 1, "publisher": "x"])) == .ignored)
        #expect(roster.count == 0)
    }

    @Test func intervalAppliesTheNetChangeInOrder() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 10, [("snapshot", [entry("a"), entry("b"), entry("me")])]))
        var changes: [RosterChange] = []
        let outcome = roster.apply(presence("interval", seq: 11, [("mode", "interval"), ("occupancy", 3), ("interval", [
            "join": ["c", "d", "me"], "leave": ["a"], "timeout": ["b"],
            "stateChanged": [entry("c", ["typing": "1"]), entry("me", ["k": "v"])],
            "joinInfo": ["d": ["role": "admin"]],
        ])])) { changes.append($0) }
        #expect(outcome == .applied)
        // The viewer's own user may be listed in `join` though its snapshot showed it.
        #expect(changes == [.joined("c"), .joined("d"), .unexpected("interval join of me, already a member"), .left("a"), .timedOut("b"), .stateChanged("c"), .stateChanged("me")])
        #expect(roster.sortedMembers == [
            RosterMember(userId: "c", state: ["typing": "1"]), RosterMember(userId: "d", info: ["role": "admin"]),
            RosterMember(userId: "me", state: ["k": "v"]),
        ])
        #expect(roster.mode == "interval")
    }

    @Test func aTruncatedSnapshotAsksForPagesAndMergesThem() {
        var roster = Roster(channel: "room")
        let outcome = roster.apply(presence("snapshot", seq: 5, [
            ("snapshot", [entry("a"), entry("b")]), ("truncated", true), ("nextPage", "p1"), ("occupancy", 5),
        ]))
        #expect(outcome == .fetchPage("p1"))
        #expect(roster.pendingPage == "p1")
        #expect(roster.truncatedSnapshots == 1)
        // An event between the snapshot and the page: its state is newer than the page's.
        roster.apply(presence("stateChanged", seq: 6, [("publisher", "c"), ("state", ["new": "1"])]))
        #expect(roster.merge(page: [entry("c", ["old": "1"]), entry("d")], nextPage: "p2") == .fetchPage("p2"))
        #expect(roster.merge(page: [entry("e")], nextPage: nil) == .applied)
        #expect(roster.pendingPage == nil)
        #expect(roster.sortedMembers.map(\.userId) == ["a", "b", "c", "d", "e"])
        #expect(roster.members["c"]?.state == ["new": "1"])
    }

    @Test func aSeqGapAsksForAResyncOnce() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 1, [("snapshot", [entry("a")])]))
        #expect(roster.apply(presence("join", seq: 2, [("publisher", "b")])) == .applied)
        #expect(roster.apply(presence("join", seq: 5, [("publisher", "c")])) == .needsResync(expectedSeq: 3, receivedSeq: 5))
        #expect(roster.isStale)
        #expect(roster.seqGaps == 1)
        // Still stale: no second request.
        #expect(roster.apply(presence("leave", seq: 9, [("publisher", "c")])) == .applied)
        #expect(roster.isStale)
    }

    @Test func aSnapshotAfterAGapClearsIt() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 1, [("snapshot", [entry("a")])]))
        roster.apply(presence("join", seq: 4, [("publisher", "b")]))
        #expect(roster.isStale)
        roster.apply(presence("snapshot", seq: 8, [("snapshot", [entry("x")])]))
        #expect(!roster.isStale)
        #expect(roster.apply(presence("join", seq: 9, [("publisher", "y")])) == .applied)
        #expect(roster.sortedMembers.map(\.userId) == ["x", "y"])
    }

    @Test func aReReadAfterAGapReplacesTheMembers() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 1, [("snapshot", [entry("a")])]))
        roster.apply(presence("join", seq: 4, [("publisher", "b")]))
        #expect(roster.resync(users: [entry("q", ["s": "1"])], seq: 12, nextPage: "n") == .fetchPage("n"))
        #expect(!roster.isStale)
        #expect(roster.merge(page: [entry("r")], nextPage: nil) == .applied)
        #expect(roster.apply(presence("leave", seq: 13, [("publisher", "q")])) == .applied)
        #expect(roster.sortedMembers.map(\.userId) == ["r"])
    }

    @Test func anAllowedSkipIsNotAGap() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 1, [("snapshot", [])]))
        roster.allowSkippedSeq()
        #expect(roster.apply(presence("join", seq: 3, [("publisher", "b")])) == .applied)
        #expect(!roster.isStale)
    }

    @Test func unexpectedEditsAreReported() {
        var roster = Roster(channel: "room")
        roster.apply(presence("snapshot", seq: 1, [("snapshot", [entry("a")])]))
        var changes: [RosterChange] = []
        roster.apply(presence("join", seq: 2, [("publisher", "a")])) { changes.append($0) }
        roster.apply(presence("leave", seq: 3, [("publisher", "zz")])) { changes.append($0) }
        #expect(changes.count == 2)
        #expect(changes.allSatisfy { if case .unexpected = $0 { true } else { false } })
    }
}
