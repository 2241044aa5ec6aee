import RollcallProtocol
import Testing
@testable import RollcallCore

/// Token lifetime (PROTOCOL §3, 1.1) on a manual clock: `expiresAt` in the login result,
/// `refresh`, the `refreshRequired` notice (once per token, 60 s before `exp`, at once for a
/// short token) and the 4401 `token expired` close at `exp` + the 30 s skew.
@Suite("Auth: token refresh and expiry")
struct TokenLifetimeTests {
    typealias F = AuthFixture

    /// A jwt-mode broker with the default notice (60 s) and skew (30 s).
    private func jwtHarness(notice: Double = 60, skew: Double = 30) -> PresenceHarness {
        PresenceHarness(authenticator: JWTAuthenticator(secret: F.secret, clockSkewSeconds: skew)) {
            $0.auth.refreshNoticeSeconds = notice
            $0.auth.clockSkewSeconds = skew
        }
    }

    /// The `exp` in ms of a fixture token with `ttl` seconds.
    private func expiry(ttl: Int) -> Int { (F.nowSeconds + ttl) * 1000 }

    /// The `session` events among `events`.
    private func notices(_ events: [JSON]) -> [JSON] { events.filter { $0["event"] == "session" } }

    /// Moves the clock to `seconds` after the fixture's start (in whole seconds, as the
    /// tokens' `exp`) and runs due timers.
    private func at(_ harness: PresenceHarness, seconds: Double) {
        let target = Int64(F.nowSeconds) * 1000 + Int64((seconds * 1000).rounded())
        harness.clock.advance(byMilliseconds: target - harness.clock.now)
        harness.run(.tick)
    }

    @Test("the login result carries expiresAt: the token's exp in ms; null in none mode")
    func loginCarriesExpiresAt() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 3600))])
        #expect(alice.lastLoginResult?.int("expiresAt") == expiry(ttl: 3600))
        let open = PresenceHarness()
        let bob = try open.login("bob")
        #expect(bob.lastLoginResult?["expiresAt"] == .null)
    }

    @Test("refresh in none mode is INVALID_REQUEST; a missing or non-string token too")
    func refreshNeedsJWTMode() throws {
        let open = PresenceHarness()
        let bob = try open.login("bob")
        #expect(bob.errorCode("refresh", [("token", .string(F.token(sub: "bob")))]) == "INVALID_REQUEST")
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token())])
        #expect(alice.errorCode("refresh", []) == "INVALID_REQUEST")
        #expect(alice.errorCode("refresh", [("token", 7)]) == "INVALID_REQUEST")
        #expect(harness.closes.isEmpty)
    }

    @Test("a bad refresh is UNAUTHORIZED, keeps the connection open and the old token in force", arguments: [
        ("another user's token", F.token(sub: "mallory", ttl: 7200)),
        ("expired", F.token(ttl: -120)),
        ("wrong secret", F.signed(#"{"sub":"alice","exp":\#(F.nowSeconds + 7200)}"#, secret: "guess")),
        ("garbage", "not-a-token"),
    ])
    func badRefresh(_ name: String, _ token: String) throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 600))])
        #expect(alice.errorCode("refresh", [("token", .string(token))]) == "UNAUTHORIZED", "\(name)")
        #expect(harness.closes.isEmpty)
        try alice.ok("ping")
        // The old token still expires when it did.
        at(harness, seconds: 600 + 30)
        #expect(harness.closes[alice.connection] == .unauthorized, "\(name)")
    }

    @Test("the notice goes out once, exactly refreshNoticeSeconds before exp")
    func noticeOnceBeforeExpiry() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 3600))])
        at(harness, seconds: 3539.999)
        #expect(notices(alice.events()).isEmpty)
        at(harness, seconds: 3540)
        let sent = notices(alice.events())
        #expect(sent == [["event": "session", "type": "refreshRequired", "expiresAt": .int(expiry(ttl: 3600))]])
        at(harness, seconds: 3600)
        #expect(notices(alice.events()).isEmpty)
        #expect(harness.closes.isEmpty)
    }

    @Test("a refresh before the notice moves it to the new token's exp")
    func refreshBeforeTheNotice() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 3600))])
        at(harness, seconds: 3000)
        let result = try alice.ok("refresh", [("token", .string(F.token(ttl: 7200)))])
        #expect(result.int("expiresAt") == expiry(ttl: 7200))
        at(harness, seconds: 3700)
        #expect(notices(alice.events()).isEmpty)
        #expect(harness.closes.isEmpty)
        at(harness, seconds: 7140)
        #expect(notices(alice.events()).map { $0.int("expiresAt") } == [expiry(ttl: 7200)])
    }

    @Test("a refresh after the notice: the new token gets its own notice, and no close at the old exp")
    func refreshAfterTheNotice() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 3600))])
        at(harness, seconds: 3550)
        #expect(notices(alice.events()).count == 1)
        try alice.ok("refresh", [("token", .string(F.token(ttl: 7200)))])
        at(harness, seconds: 3700)
        #expect(harness.closes.isEmpty)
        #expect(notices(alice.events()).isEmpty)
        at(harness, seconds: 7140)
        #expect(notices(alice.events()).count == 1)
    }

    @Test("a short token gets the notice at once, after the login reply")
    func immediateNoticeForAShortToken() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 20))])
        harness.run(.tick)
        #expect(notices(alice.events()).map { $0.int("expiresAt") } == [expiry(ttl: 20)])
        // And a refresh to another short token: its own notice, at once.
        try alice.ok("refresh", [("token", .string(F.token(ttl: 40)))])
        harness.run(.tick)
        #expect(notices(alice.events()).map { $0.int("expiresAt") } == [expiry(ttl: 40)])
    }

    @Test("expiry exactly at exp + clockSkewSeconds: close 4401 token expired, leave everywhere, user offline")
    func expiryClosesAtExpPlusSkew() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 600))])
        let bob = try harness.login("bob", ["token": .string(F.token(sub: "bob", ttl: 7200))])
        try alice.ok("join", [("channel", "lobby")])
        try alice.ok("join", [("channel", "room:1")])
        try bob.ok("join", [("channel", "lobby")])
        try bob.ok("join", [("channel", "room:1")])
        try bob.ok("subscribeUserStatus", [("userIds", ["alice"])])
        _ = bob.events()
        at(harness, seconds: 629.999)
        #expect(harness.closes[alice.connection] == nil)
        at(harness, seconds: 630)
        #expect(harness.closes[alice.connection] == .unauthorized)
        #expect(harness.closeReasons[alice.connection] == "token expired")
        let events = bob.events()
        let leaves = events.filter { $0["event"] == "presence" && $0["type"] == "leave" }
        #expect(Set(leaves.compactMap { $0.string("channel") }) == ["lobby", "room:1"])
        #expect(leaves.allSatisfy { $0["publisher"] == "alice" })
        let status = events.first { $0["event"] == "userStatus" }?["statuses"]?.arrayValue?.first
        #expect(status?["status"] == "offline")
        // The session is gone, not held: nothing resumes it.
        #expect(harness.broker.directory.sessions(of: Name(unchecked: "alice")).isEmpty)
    }

    @Test("a held session has no timer; a resume with a fresh token arms the new one")
    func heldSessionsResumeWithANewToken() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 600)), "presenceTimeout": 300])
        alice.drop()
        at(harness, seconds: 200)
        let resumed = try harness.login("alice", ["token": .string(F.token(ttl: 3600)), "resumeToken": .string(alice.resumeToken)])
        #expect(resumed.lastLoginResult?["resumed"] == true)
        #expect(resumed.lastLoginResult?.int("expiresAt") == expiry(ttl: 3600))
        at(harness, seconds: 700)
        #expect(harness.closes[resumed.connection] == nil)
        at(harness, seconds: 3630)
        #expect(harness.closes[resumed.connection] == .unauthorized)
    }

    @Test("a refresh that narrows channels keeps memberships already made; writes and reads there are FORBIDDEN, leave is not")
    func refreshNarrowsChannels() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(extra: #""channels":["room:*"]"#))])
        let bob = try harness.login("bob", ["token": .string(F.token(sub: "bob"))])
        try alice.ok("join", [("channel", "room:a")])
        try alice.ok("join", [("channel", "room:b")])
        try bob.ok("join", [("channel", "room:b")])
        _ = bob.events()
        try alice.ok("refresh", [("token", .string(F.token(ttl: 7200, extra: #""channels":["room:a"]"#)))])
        // Still a member of room:b: nobody saw a leave.
        #expect(bob.presenceEvents().isEmpty)
        let roster = try bob.ok("getOnlineUsers", [("channel", "room:b")])
        #expect(roster["users"] == [["userId": "alice"], ["userId": "bob"]])
        // But the new token governs every later request about room:b.
        #expect(alice.errorCode("publish", [("channel", "room:b"), ("message", "hi")]) == "FORBIDDEN")
        #expect(alice.errorCode("setState", [("channel", "room:b"), ("state", ["a": "b"])]) == "FORBIDDEN")
        #expect(alice.errorCode("join", [("channel", "room:b")]) == "FORBIDDEN")
        #expect(alice.errorCode("getOnlineUsers", [("channel", "room:b")]) == "FORBIDDEN")
        #expect(try alice.ok("getUserChannels", [("userId", "alice")])["channels"] == [["channel": "room:a", "channelType": "message"]])
        try alice.ok("setState", [("channel", "room:a"), ("state", ["a": "b"])])
        try alice.ok("leave", [("channel", "room:b")])
        #expect(bob.presenceEvents().map { $0.string("type") } == ["leave"])
    }

    @Test("a wall clock stepped back: the timer fires at its monotonic deadline, finds exp not reached by the wall clock, and waits for what remains")
    func wallClockSteppedBack() throws {
        let harness = jwtHarness()
        let alice = try harness.login("alice", ["token": .string(F.token(ttl: 600))])
        _ = alice.events()
        // exp + skew, counted from now (the monotonic deadline the timer is armed for).
        let untilClose = Double(expiry(ttl: 600) + 30_000 - Int(harness.clock.now)) / 1000
        harness.clock.stepWallClock(byMilliseconds: -100_000)
        harness.advance(seconds: untilClose)
        // The wall clock says exp - 70 s: no notice yet, no close.
        #expect(harness.closes[alice.connection] == nil)
        #expect(notices(alice.events()).isEmpty)
        harness.advance(seconds: 10)
        #expect(notices(alice.events()).count == 1)
        harness.advance(seconds: 89.999)
        #expect(harness.closes[alice.connection] == nil)
        harness.advance(seconds: 0.001)
        #expect(harness.closes[alice.connection] == .unauthorized)
    }

    @Test("one timer entry per live session, at its next deadline; ticks before it find nothing to do")
    func oneTimerPerSession() throws {
        let harness = jwtHarness()
        var clients: [HarnessClient] = []
        for n in 0..<200 {
            let user = "u\(n)"
            clients.append(try harness.login(user, ["token": .string(F.token(sub: user, ttl: 3600 + n))]))
        }
        #expect(harness.broker.tokenDeadlines.count == 200)
        // The earliest deadline is u0's notice (exp - 60 s); nothing is due before it.
        let firstNotice = harness.clock.monotonic + Int64(expiry(ttl: 3600) - 60_000) - harness.clock.now
        #expect(harness.broker.tokenDeadlines.nextDeadline() == firstNotice)
        at(harness, seconds: 3539)
        #expect(clients.allSatisfy { notices($0.events()).isEmpty })
        #expect(harness.broker.tokenDeadlines.count == 200)
        at(harness, seconds: 3540)
        #expect(notices(clients[0].events()).count == 1)
        #expect(clients.dropFirst().allSatisfy { notices($0.events()).isEmpty })
        // Ended sessions leave nothing armed.
        for client in clients { client.close() }
        #expect(harness.broker.tokenDeadlines.count == 0)
    }
}
