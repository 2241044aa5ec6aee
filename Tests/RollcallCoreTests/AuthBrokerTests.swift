import RollcallProtocol
import Testing
@testable import RollcallCore

/// JWT mode end to end through `Broker.handle`: login replies, the 4401 close, and the
/// token's `channels` claim enforced by the presence engine.
@Suite("Auth: broker in jwt mode")
struct AuthBrokerTests {
    typealias F = AuthFixture

    /// A harness whose broker checks tokens signed with the fixture secret (30 s skew).
    private func jwtHarness(skew: Double = 30) -> PresenceHarness {
        PresenceHarness(authenticator: JWTAuthenticator(secret: F.secret, clockSkewSeconds: skew))
    }

    /// Opens `connection` and sends `login`, returning every action the broker answered with.
    private func rawLogin(_ harness: PresenceHarness, on connection: ConnectionID, _ arguments: JSON) -> [Action] {
        _ = harness.broker.handle(.opened(connection))
        var members: [(key: String, value: JSON)] = [("id", 1), ("op", "login")]
        members.append(contentsOf: arguments.objectValue?.members ?? [])
        return harness.broker.handle(.received(connection, JSON.object(JSONObject(members)).encoded()))
    }

    /// Asserts `actions` are exactly an UNAUTHORIZED reply to id 1 and then a 4401 close; returns the message.
    @discardableResult
    private func expectUnauthorizedThenClose(_ actions: [Action], on connection: ConnectionID,
                                             sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(actions.count == 2, "expected a reply and a close, got \(actions)", sourceLocation: sourceLocation)
        guard case .send(let to, let bytes, _) = actions[0], to == connection else {
            Issue.record("first action is not the reply: \(actions[0])", sourceLocation: sourceLocation)
            return ""
        }
        let reply = try JSONParser.parse(bytes)
        #expect(reply["id"] == 1, sourceLocation: sourceLocation)
        #expect(reply["ok"] == false, sourceLocation: sourceLocation)
        #expect(reply["error"]?["code"] == "UNAUTHORIZED", sourceLocation: sourceLocation)
        #expect(actions[1] == .close(connection, .unauthorized, reason: "unauthorized"), sourceLocation: sourceLocation)
        #expect(CloseCode.unauthorized.rawValue == 4401, sourceLocation: sourceLocation)
        let message = reply["error"]?["message"]?.stringValue ?? ""
        #expect(!message.contains(F.secret), sourceLocation: sourceLocation)
        return message
    }

    @Test("a valid token logs in")
    func validTokenLogsIn() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token())])
        #expect(alice.lastLoginResult?["userId"] == "alice")
        #expect(harness.closes.isEmpty)
        try alice.ok("join", [("channel", "anything")])
    }

    @Test("no token (absent, null or empty): UNAUTHORIZED, then close 4401, and no session", arguments: [
        (["userId": "alice"] as JSON, JWTRefusal.missingToken),
        (["userId": "alice", "token": JSON.null] as JSON, .missingToken),
        (["userId": "alice", "token": ""] as JSON, .malformed("expected 3 dot-separated parts, found 1")),
    ])
    func missingToken(_ arguments: JSON, _ expected: JWTRefusal) throws {
        let harness = jwtHarness()
        let connection = ConnectionID(900)
        let message = try expectUnauthorizedThenClose(rawLogin(harness, on: connection, arguments), on: connection)
        #expect(message == expected.message)
        #expect(harness.broker.directory.liveCount == 0)
    }

    @Test("refused tokens: UNAUTHORIZED naming the reason, close 4401, no session, the connection is done",
          arguments: [
            ("wrong secret", F.signed(#"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#, secret: "guess"), JWTRefusal.badSignature),
            ("alg none", F.raw(#"{"alg":"none"}"#, #"{"sub":"alice","exp":\#(F.nowSeconds + 60)}"#) + ".", .unsupportedAlgorithm("none")),
            ("expired", F.token(ttl: -60), .expired),
            ("another user's token", F.token(sub: "bob"), .subjectMismatch),
            ("missing exp", F.signed(#"{"sub":"alice"}"#), .missingClaim("exp")),
            ("malformed", "not.a-token", .malformed("expected 3 dot-separated parts, found 2")),
          ])
    func refusedToken(_ name: String, _ token: String, _ expected: JWTRefusal) throws {
        let harness = jwtHarness()
        let connection = ConnectionID(901)
        let actions = rawLogin(harness, on: connection, ["userId": "alice", "token": .string(token)])
        let message = try expectUnauthorizedThenClose(actions, on: connection)
        #expect(message == expected.message, "\(name)")
        #expect(harness.broker.directory.liveCount == 0)
        #expect(harness.broker.directory.sessions(of: Name(unchecked: "alice")).isEmpty)
        // The core has forgotten the connection: a late frame gets nothing, its end is ignored.
        #expect(harness.broker.handle(.received(connection, Array(#"{"id":2,"op":"ping"}"#.utf8))).isEmpty)
        #expect(harness.broker.handle(.ended(connection, .closeFrame)).isEmpty)
        // Others are unaffected.
        let bob = try harness.login("bob", ["token": .string(F.token(sub: "bob"))])
        try bob.ok("ping")
    }

    @Test("a login with a wrong argument type is INVALID_REQUEST and keeps the connection (not 4401)")
    func wrongTokenTypeIsNotUnauthorized() throws {
        let harness = jwtHarness()
        let connection = ConnectionID(902)
        let actions = rawLogin(harness, on: connection, ["userId": "alice", "token": 42])
        #expect(actions.count == 1)
        guard case .send(_, let bytes, _) = actions.first else { Issue.record("no reply"); return }
        #expect(try JSONParser.parse(bytes)["error"]?["code"] == "INVALID_REQUEST")
        // The same connection may then log in properly.
        let retry = harness.broker.handle(.received(connection, JSON.object(JSONObject([
            ("id", 2), ("op", "login"), ("userId", "alice"), ("token", .string(F.token())),
        ])).encoded()))
        guard case .send(_, let ok, _) = retry.first else { Issue.record("no reply"); return }
        #expect(try JSONParser.parse(ok)["ok"] == true)
    }

    @Test("channels claim: room:1 allowed; lobby FORBIDDEN for join, publish, setState and reads")
    func channelsClaimLimitsWrites() throws {
        let harness = jwtHarness()
        let token = JWTMinter.mint(secret: F.secret, userId: "alice", channels: ["room:*"], ttlSeconds: 600, now: harness.clock.now)
        let alice = try harness.login("alice", ["token": .string(token)])
        let bob = try harness.login("bob", ["token": .string(F.token(sub: "bob"))])
        try bob.ok("join", [("channel", "lobby")])
        try bob.ok("join", [("channel", "room:1")])
        _ = bob.events()

        try alice.ok("join", [("channel", "room:1")])
        try alice.ok("publish", [("channel", "room:1"), ("message", "hi")])
        try alice.ok("setState", [("channel", "room:1"), ("state", ["mood": "ok"])])

        let forbidden: [(String, [(String, JSON)])] = [
            ("join", [("channel", "lobby")]),
            ("publish", [("channel", "lobby"), ("message", "hi")]),
            ("setState", [("channel", "lobby"), ("state", ["mood": "sneaky"])]),
            ("join", [("channel", "room")]),          // the pattern needs the colon
            ("join", [("channel", "xroom:1")]),       // anchored at the start
            ("join", [("channel", "lobby"), ("channelType", "stream")]),  // every channel type
        ]
        for (op, arguments) in forbidden {
            let reply = alice.send(op, arguments)
            #expect(reply["error"]?["code"] == "FORBIDDEN", "\(op) \(arguments)")
            #expect(reply["error"]?["message"]?.stringValue?.isEmpty == false)
        }
        // Nothing of the forbidden requests reached bob in the lobby.
        let lobbyEvents = bob.events().filter { $0["channel"] == "lobby" }
        #expect(lobbyEvents.isEmpty)

        // Reads of a channel are limited too (1.1, ReadPermissionTests); user status is not
        // (the token has no users claim).
        #expect(alice.errorCode("getOnlineUsers", [("channel", "lobby")]) == "FORBIDDEN")
        let room = try alice.ok("getOnlineUsers", [("channel", "room:1")])
        #expect(room["users"] == [["userId": "alice"], ["userId": "bob"]])
        #expect(try alice.ok("getUserChannels", [("userId", "bob")])["totalChannel"] == 1)
        try alice.ok("getUserStatus", [("userIds", ["bob"])])
        try alice.ok("setCustomStatus", [("customStatus", "busy")])
        try alice.ok("subscribeUserStatus", [("userIds", ["bob"])])
        try alice.ok("ping")
        #expect(harness.closes.isEmpty)
    }

    @Test("an empty channels claim forbids every join but still logs in")
    func emptyChannelsClaim() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(extra: #""channels":[]"#))])
        #expect(alice.errorCode("join", [("channel", "room:1")]) == "FORBIDDEN")
        #expect(alice.errorCode("getOnlineUsers", [("channel", "room:1")]) == "FORBIDDEN")
    }

    @Test("a minted token round-trips through login, and expires by the broker's clock")
    func mintedTokenThroughTheBroker() throws {
        let harness = jwtHarness(skew: 0)
        let token = JWTMinter.mint(secret: F.secret, userId: "carol", ttlSeconds: 60, now: harness.clock.now)
        _ = try harness.login("carol", ["token": .string(token)])
        harness.advance(seconds: 61)
        let connection = ConnectionID(903)
        try expectUnauthorizedThenClose(rawLogin(harness, on: connection, ["userId": "carol", "token": .string(token)]), on: connection)
    }

    @Test("resuming a held session needs a valid token too, and takes the new token's grant")
    func resumeNeedsAToken() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token())])
        try alice.ok("join", [("channel", "lobby")])
        alice.drop()
        // Without a token the held session stays held.
        let connection = ConnectionID(904)
        try expectUnauthorizedThenClose(rawLogin(harness, on: connection, ["userId": "alice", "resumeToken": .string(alice.resumeToken)]),
                                        on: connection)
        // With a narrower token it resumes, limited from then on.
        let narrow = try harness.login("alice", ["token": .string(F.token(extra: #""channels":["room:*"]"#)),
                                                 "resumeToken": .string(alice.resumeToken)])
        #expect(narrow.lastLoginResult?["resumed"] == true)
        #expect(narrow.errorCode("setState", [("channel", "lobby"), ("state", ["a": "b"])]) == "FORBIDDEN")
        // Leaving is never limited.
        try narrow.ok("leave", [("channel", "lobby")])
    }

    @Test("auth none accepts any user without a token")
    func openMode() throws {
        let harness = PresenceHarness(authenticator: try Authenticators.make(Configuration(), environment: [:]))
        try harness.login("anyone").ok("join", [("channel", "lobby")])
    }
}
