@testable import RollcallCore
import RollcallProtocol
import Testing

/// Every presence op and its error codes, through `Broker.handle` with real frames.
@Suite struct PresenceOpsTests {
    @Test func joinRepliesThenSendsTheSnapshot() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let actions = harness.broker.handle(.received(alice.connection, Array(#"{"id":1,"op":"join","channel":"lobby","state":{"mood":"ok"}}"#.utf8)))
        #expect(actions.count == 2)
        guard actions.count == 2, case .send(_, let first, _) = actions[0], case .send(_, let second, _) = actions[1] else { return }
        let reply = try JSONParser.parse(first)
        #expect(reply == ["id": 1, "ok": true, "result": ["occupancy": 1, "mode": "announce"]])
        let snapshot = try JSONParser.parse(second)
        #expect(snapshot.string("type") == "snapshot")
        #expect(snapshot["snapshot"] == [["userId": "alice", "state": ["mood": "ok"]]])
        #expect(snapshot.int("occupancy") == 1)
        #expect(snapshot.int("seq") == 1)
        #expect(snapshot.string("mode") == "announce")
        #expect(snapshot.string("channelType") == "message")
        #expect(snapshot.int("timestamp") == Int(harness.clock.now))
    }

    @Test func validatesChannelArguments() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        #expect(alice.errorCode("join", [("channel", "lobby"), ("channelType", "video")]) == "INVALID_ARGUMENT")
        #expect(alice.errorCode("join", [("channel", "")]) == "INVALID_ARGUMENT")
        #expect(alice.errorCode("join", [("channel", "a\u{7}b")]) == "INVALID_ARGUMENT")
        #expect(alice.errorCode("join", [("channel", .string(String(repeating: "x", count: 129)))]) == "INVALID_ARGUMENT")
        #expect(alice.errorCode("join", []) == "INVALID_REQUEST")
        #expect(alice.errorCode("join", [("channel", 5)]) == "INVALID_REQUEST")
        #expect(alice.errorCode("join", [("channel", "lobby"), ("presence", "yes")]) == "INVALID_REQUEST")
        #expect(alice.errorCode("join", [("channel", "lobby"), ("state", "x")]) == "INVALID_REQUEST")
        #expect(harness.broker.presence.channelCount == 0)
        #expect(try alice.ok("join", [("channel", .string(String(repeating: "x", count: 128)))]).int("occupancy") == 1)
    }

    @Test func channelTypesAreSeparateNamespaces() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try alice.ok("join", [("channel", "x")])
        try bob.ok("join", [("channel", "x"), ("channelType", "stream")])
        #expect(try bob.ok("getOnlineUsers", [("channel", "x")])["users"] == [["userId": "alice"]])
        #expect(try bob.ok("getOnlineUsers", [("channel", "x"), ("channelType", "stream")])["users"] == [["userId": "bob"]])
        #expect(alice.presenceEvents().count == 1)  // only its own snapshot
        let channels = try alice.ok("getUserChannels", [("userId", "bob")])
        #expect(channels == ["totalChannel": 1, "channels": [["channel": "x", "channelType": "stream"]]])
    }

    @Test func grantPatternsLimitJoinPublishAndSetState() throws {
        let harness = PresenceHarness(authenticator: PatternAuthenticator(patterns: ["room:*", "lobby?"]))
        let limited = try harness.login("limited-1")
        #expect(limited.errorCode("join", [("channel", "secret")]) == "FORBIDDEN")
        #expect(limited.errorCode("publish", [("channel", "secret"), ("message", "hi")]) == "FORBIDDEN")
        #expect(limited.errorCode("setState", [("channel", "secret"), ("state", ["a": "b"])]) == "FORBIDDEN")
        #expect(limited.errorCode("join", [("channel", "lobby")]) == "FORBIDDEN")
        try limited.ok("join", [("channel", "room:42")])
        try limited.ok("join", [("channel", "lobby1"), ("channelType", "stream")])
        #expect(limited.errorCode("getOnlineUsers", [("channel", "secret")]) == "FORBIDDEN")  // reads too (1.1)
        try limited.ok("getOnlineUsers", [("channel", "room:42")])
        #expect(harness.broker.presence.channelCount == 2)
    }

    @Test func tooManyChannelsCountsDistinctChannelsOfTheSession() throws {
        let harness = PresenceHarness { $0.limits.maxChannelsPerSession = 2 }
        let alice = try harness.login("alice")
        try alice.ok("join", [("channel", "a")])
        try alice.ok("join", [("channel", "a"), ("channelType", "stream")])
        try alice.ok("join", [("channel", "a")])  // again: idempotent, not a third channel
        #expect(alice.errorCode("join", [("channel", "b")]) == "TOO_MANY_CHANNELS")
        try alice.ok("leave", [("channel", "a")])
        try alice.ok("join", [("channel", "b")])
        let other = try harness.login("alice")  // the limit is per session
        try other.ok("join", [("channel", "c")])
    }

    @Test func leaveNeedsMembershipAndDeletesTheState() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        #expect(alice.errorCode("leave", [("channel", "lobby")]) == "NOT_IN_CHANNEL")
        try alice.ok("join", [("channel", "lobby"), ("state", ["k": "v"])])
        try bob.ok("join", [("channel", "lobby")])
        #expect(bob.errorCode("leave", [("channel", "lobby"), ("channelType", "stream")]) == "NOT_IN_CHANNEL")
        _ = bob.events()
        #expect(try alice.ok("leave", [("channel", "lobby")]) == [:])
        let events = bob.presenceEvents()
        #expect(events.count == 1)
        #expect(events.first?.string("type") == "leave")
        #expect(events.first?["state"] == nil)
        #expect(events.first?.int("occupancy") == 1)
        #expect(bob.errorCode("getState", [("channel", "lobby"), ("userId", "alice")]) == "USER_NOT_PRESENT")
        try alice.ok("join", [("channel", "lobby")])
        #expect(try bob.ok("getState", [("channel", "lobby"), ("userId", "alice")]) == ["userId": "alice", "state": [:]])
        try alice.ok("leave", [("channel", "lobby")])
        try bob.ok("leave", [("channel", "lobby")])
        #expect(harness.broker.presence.channelCount == 0)
        #expect(harness.broker.presence.userChannels.isEmpty)
    }

    @Test func publishDeliversToMessageSessionsExceptThePublisher() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let aliceTab = try harness.login("alice")
        let bob = try harness.login("bob")
        let carol = try harness.login("carol")
        try alice.ok("join", [("channel", "lobby")])
        try aliceTab.ok("join", [("channel", "lobby"), ("presence", false)])
        try bob.ok("join", [("channel", "lobby")])
        try carol.ok("join", [("channel", "lobby"), ("messages", false)])
        for client in [alice, aliceTab, bob, carol] { _ = client.events() }
        let message: JSON = ["text": "hi", "n": [1, .number(JSONNumber(literal: "2.5e0")), nil, true]]
        #expect(try alice.ok("publish", [("channel", "lobby"), ("message", message)]) == ["recipients": 2])
        #expect(alice.events().isEmpty)
        #expect(carol.events().isEmpty)
        let expected: JSON = [
            "event": "message", "channel": "lobby", "channelType": "message", "publisher": "alice",
            "message": message, "timestamp": .int(Int(harness.clock.now)),
        ]
        #expect(bob.events() == [expected])
        #expect(aliceTab.events() == [expected])
        #expect(harness.rawEvents[bob.connection]?.last == harness.rawEvents[aliceTab.connection]?.last)
        // Not a member: allowed on a message channel, even an empty one.
        let dave = try harness.login("dave")
        #expect(try dave.ok("publish", [("channel", "lobby"), ("message", "x")]) == ["recipients": 3])
        #expect(try dave.ok("publish", [("channel", "nobody"), ("message", "x")]) == ["recipients": 0])
        #expect(harness.broker.presence.channelCount == 1)
        #expect(dave.errorCode("publish", [("channel", "lobby")]) == "INVALID_REQUEST")
    }

    @Test func publishToAStreamNeedsMembershipAndSizeIsBounded() throws {
        let harness = PresenceHarness { $0.limits.maxMessageBytes = 10 }
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "s"), ("channelType", "stream")])
        #expect(alice.errorCode("publish", [("channel", "s"), ("channelType", "stream"), ("message", "x")]) == "NOT_IN_CHANNEL")
        #expect(try bob.ok("publish", [("channel", "s"), ("channelType", "stream"), ("message", "12345678")]) == ["recipients": 0])
        #expect(bob.errorCode("publish", [("channel", "s"), ("channelType", "stream"), ("message", "123456789")]) == "MESSAGE_TOO_LARGE")
        try alice.ok("join", [("channel", "s"), ("channelType", "stream")])
        _ = alice.events()
        #expect(try bob.ok("publish", [("channel", "s"), ("channelType", "stream"), ("message", ["a": 1])]) == ["recipients": 1])
        #expect(alice.events().first?["message"] == ["a": 1])
    }

    @Test func setStateMergesAndAnnouncesOnlyRealChanges() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try alice.ok("join", [("channel", "lobby"), ("state", ["a": "1"])])
        try bob.ok("join", [("channel", "lobby")])
        _ = bob.events()
        #expect(try alice.ok("setState", [("channel", "lobby"), ("state", ["b": "2"])]) == ["state": ["a": "1", "b": "2"]])
        var events = bob.presenceEvents()
        #expect(events.count == 1)
        #expect(events.first?.string("type") == "stateChanged")
        #expect(events.first?["state"] == ["a": "1", "b": "2"])
        #expect(events.first?.string("publisher") == "alice")
        let seq = events.first?.int("seq")
        // The same values again: no event, no seq step.
        try alice.ok("setState", [("channel", "lobby"), ("state", ["b": "2"])])
        try alice.ok("removeState", [("channel", "lobby"), ("keys", ["zz"])])
        try alice.ok("join", [("channel", "lobby"), ("state", ["a": "1"])])
        #expect(bob.presenceEvents().isEmpty)
        #expect(try alice.ok("removeState", [("channel", "lobby"), ("keys", ["a"])]) == ["state": ["b": "2"]])
        events = bob.presenceEvents()
        #expect(events.map { $0.int("seq") } == [seq.map { $0 + 1 }])
        #expect(events.first?["state"] == ["b": "2"])
        #expect(alice.errorCode("removeState", [("channel", "lobby")]) == "INVALID_REQUEST")
        #expect(alice.errorCode("setState", [("channel", "lobby")]) == "INVALID_REQUEST")
        #expect(try bob.ok("getState", [("channel", "lobby"), ("userId", "alice")]) == ["userId": "alice", "state": ["b": "2"]])
    }

    @Test func everyStateLimitHasItsCodeAndLeavesTheStateUnchanged() throws {
        let harness = PresenceHarness {
            $0.state.maxKeys = 3
            $0.state.maxKeyBytes = 4
            $0.state.maxValueBytes = 5
            $0.state.maxTotalBytes = 16
        }
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try alice.ok("join", [("channel", "c"), ("state", ["a": "1", "b": "2"])])
        try bob.ok("join", [("channel", "c")])
        _ = bob.events()
        let cases: [(JSON, String)] = [
            (["c": "3", "d": "4"], "TOO_MANY_KEYS"),
            (["abcde": "1"], "KEY_TOO_LONG"),
            (["c": "123456"], "VALUE_TOO_LONG"),
            (["cccc": "12345", "a": "12345"], "STATE_TOO_LARGE"),
            (["": "x"], "INVALID_ARGUMENT"),
            (["c": 3], "INVALID_REQUEST"),
        ]
        for (state, code) in cases {
            #expect(alice.errorCode("setState", [("channel", "c"), ("state", state)]) == code)
            #expect(alice.errorCode("join", [("channel", "c"), ("state", state)]) == code)
        }
        #expect(try bob.ok("getState", [("channel", "c"), ("userId", "alice")])["state"] == ["a": "1", "b": "2"])
        #expect(bob.events().isEmpty)
        // Exactly at the limits is fine: 3 keys, 16 bytes.
        try alice.ok("setState", [("channel", "c"), ("state", ["cccc": "12345", "b": "2"])])
        #expect(try bob.ok("getState", [("channel", "c"), ("userId", "alice")])["state"] == ["a": "1", "b": "2", "cccc": "12345"])
        // A replaced value counts once.
        try alice.ok("setState", [("channel", "c"), ("state", ["cccc": "abcde"])])
    }

    @Test func stateSetBeforeJoiningIsHeldAndAppliedAtTheJoin() throws {
        let harness = PresenceHarness { $0.state.maxPendingChannels = 2 }
        let alice = try harness.login("alice")
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "a")])
        _ = bob.events()
        #expect(try alice.ok("setState", [("channel", "a"), ("state", ["x": "1"])]) == ["state": ["x": "1"], "pending": true])
        #expect(try alice.ok("setState", [("channel", "a"), ("state", ["y": "2"])]) == ["state": ["x": "1", "y": "2"], "pending": true])
        try alice.ok("setState", [("channel", "b"), ("state", ["x": "1"])])
        #expect(alice.errorCode("setState", [("channel", "c"), ("state", ["x": "1"])]) == "TOO_MANY_PENDING_STATES")
        #expect(try alice.ok("removeState", [("channel", "b"), ("keys", ["x"])]) == ["state": [:], "pending": true])
        try alice.ok("setState", [("channel", "c"), ("state", ["x": "1"])])  // b's hold is gone
        #expect(bob.events().isEmpty)
        #expect(bob.errorCode("getState", [("channel", "a"), ("userId", "alice")]) == "USER_NOT_PRESENT")
        try alice.ok("join", [("channel", "a"), ("state", ["y": "3"])])
        let join = bob.presenceEvents()
        #expect(join.count == 1)
        #expect(join.first?["state"] == ["x": "1", "y": "3"])
        // Held by the session: another session of the user does not get it.
        let tab = try harness.login("alice")
        tab.ok_ignoring("join", [("channel", "c")])
        #expect(try bob.ok("getState", [("channel", "c"), ("userId", "alice")])["state"] == [:])
        // It is dropped when the session ends.
        alice.close()
        let again = try harness.login("carol")
        try again.ok("setState", [("channel", "d"), ("state", ["k": "v"])])
        #expect(harness.broker.directory.sessions(of: Name(unchecked: "carol")).first?.presence.pendingStates.count == 1)
    }

    @Test func getOnlineUsersPagesInByteOrder() throws {
        let harness = PresenceHarness()
        let names = ["b", "a", "é", "Z", "e\u{301}", "c", "d"]
        var clients: [HarnessClient] = []
        for name in names {
            let client = try harness.login(name)
            try client.ok("join", [("channel", "lobby"), ("state", ["n": .string(name)])])
            clients.append(client)
        }
        let observer = try harness.login("observer")  // not a member
        let all = try observer.ok("getOnlineUsers", [("channel", "lobby"), ("includeState", true)])
        #expect(all.int("totalOccupancy") == 7)
        #expect(all["nextPage"] == .null)
        let order = (all["users"]?.arrayValue ?? []).compactMap { $0.string("userId") }
        #expect(order == ["Z", "a", "b", "c", "d", "e\u{301}", "é"])
        #expect(all["users"]?.arrayValue?.first == ["userId": "Z", "state": ["n": "Z"]])

        var seen: [String] = []
        var page: JSON = .null
        var calls = 0
        repeat {
            var arguments: [(String, JSON)] = [("channel", "lobby"), ("pageSize", 2)]
            if !page.isNull { arguments.append(("page", page)) }
            let result = try observer.ok("getOnlineUsers", arguments)
            seen += (result["users"]?.arrayValue ?? []).compactMap { $0.string("userId") }
            page = result["nextPage"] ?? .null
            calls += 1
            if calls == 1 {
                // Churn during the scan: someone before the cursor leaves, someone after joins.
                try clients[1].ok("leave", [("channel", "lobby")])  // "a"
                let late = try harness.login("cc")
                try late.ok("join", [("channel", "lobby")])
            }
        } while !page.isNull && calls < 10
        #expect(seen == ["Z", "a", "b", "c", "cc", "d", "e\u{301}", "é"])

        let count = try observer.ok("getOnlineUsers", [("channel", "lobby"), ("includeUserId", false)])
        #expect(count == ["totalOccupancy": 7, "seq": 9, "users": [], "nextPage": nil], "seq: the channel's 9 join events (1.1)")
        #expect(observer.errorCode("getOnlineUsers", [("channel", "lobby"), ("includeUserId", false), ("includeState", true)]) == "INVALID_ARGUMENT")
        #expect(observer.errorCode("getOnlineUsers", [("channel", "lobby"), ("pageSize", 0)]) == "INVALID_ARGUMENT")
        #expect(observer.errorCode("getOnlineUsers", [("channel", "lobby"), ("pageSize", 1001)]) == "INVALID_ARGUMENT")
        #expect(observer.errorCode("getOnlineUsers", [("channel", "lobby"), ("pageSize", .number(JSONNumber(literal: "1.5")))]) == "INVALID_ARGUMENT")
        #expect(observer.errorCode("getOnlineUsers", [("channel", "lobby"), ("page", "garbage")]) == "INVALID_ARGUMENT")
        #expect(try observer.ok("getOnlineUsers", [("channel", "lobby"), ("pageSize", 1000)])["users"]?.arrayValue?.count == 7)
        #expect(try observer.ok("getOnlineUsers", [("channel", "empty")]) == ["totalOccupancy": 0, "seq": 0, "users": [], "nextPage": nil])
    }

    @Test func getUserChannelsFollowsMembership() throws {
        let harness = PresenceHarness()
        let alice = try harness.login("alice")
        let tab = try harness.login("alice")
        try alice.ok("join", [("channel", "b")])
        try alice.ok("join", [("channel", "a"), ("channelType", "stream")])
        try tab.ok("join", [("channel", "b")])
        try tab.ok("join", [("channel", "a")])
        let expected: JSON = ["totalChannel": 3, "channels": [
            ["channel": "a", "channelType": "message"], ["channel": "b", "channelType": "message"],
            ["channel": "a", "channelType": "stream"],
        ]]
        #expect(try alice.ok("getUserChannels", [("userId", "alice")]) == expected)
        try alice.ok("leave", [("channel", "b")])  // the tab is still in b
        #expect(try alice.ok("getUserChannels", [("userId", "alice")]) == expected)
        tab.close()
        #expect(try alice.ok("getUserChannels", [("userId", "alice")]) == ["totalChannel": 1, "channels": [["channel": "a", "channelType": "stream"]]])
        #expect(try alice.ok("getUserChannels", [("userId", "nobody")]) == ["totalChannel": 0, "channels": []])
        #expect(alice.errorCode("getUserChannels", [("userId", "")]) == "INVALID_ARGUMENT")
        #expect(alice.errorCode("getUserChannels", []) == "INVALID_REQUEST")
    }

    @Test func presenceOpsNeedALogin() {
        let harness = PresenceHarness()
        harness.run(.opened(ConnectionID(99)))
        let reply = harness.request(on: ConnectionID(99), "join", [("channel", "x")])
        #expect(reply["error"]?.string("code") == "NOT_LOGGED_IN")
    }
}

extension HarnessClient {
    /// Sends a request expected to succeed, recording an issue when it fails.
    func ok_ignoring(_ op: String, _ arguments: [(String, JSON)]) {
        do { try ok(op, arguments) } catch { Issue.record("\(error)") }
    }
}
