import RollcallProtocol
import Testing
@testable import RollcallCore

/// Read permissions (PROTOCOL §3, 1.1): the token's `users` globs on `getUserStatus`,
/// `subscribeUserStatus` and another user's `getUserChannels`; its `channels` globs on
/// `getOnlineUsers`, `getState` and the list `getUserChannels` returns.
@Suite("Auth: read permissions")
struct ReadPermissionTests {
    typealias F = AuthFixture

    /// A jwt broker where bob, carol and team:1 are each in lobby and room:1, and alice is
    /// logged in with `claims` (raw JSON members).
    private func world(_ claims: String) throws -> (PresenceHarness, HarnessClient) {
        let harness = PresenceHarness(authenticator: JWTAuthenticator(secret: F.secret))
        for user in ["bob", "carol", "team:1"] {
            let client = try harness.login(user, ["token": .string(F.token(sub: user))])
            try client.ok("join", [("channel", "lobby"), ("state", ["k": "v"])])
            try client.ok("join", [("channel", "room:1")])
        }
        let alice = try harness.login("alice", ["token": .string(F.token(extra: claims))])
        try alice.ok("join", [("channel", "room:2")])
        return (harness, alice)
    }

    private func failures(_ result: JSON) -> [String: String] {
        var map: [String: String] = [:]
        for entry in result["failed"]?.arrayValue ?? [] { map[entry.string("userId") ?? "?"] = entry.string("code") }
        return map
    }

    private func ids(_ list: JSON?) -> [String] { (list?.arrayValue ?? []).compactMap { $0.string("userId") } }

    @Test("getUserStatus: ids outside users are failed FORBIDDEN, the rest answered; the own id always")
    func getUserStatus() throws {
        let (_, alice) = try world(#""users":["team:*","bob"]"#)
        let result = try alice.ok("getUserStatus", [("userIds", ["alice", "bob", "team:1", "carol", "", "team:2"])])
        #expect(ids(result["statuses"]) == ["alice", "bob", "team:1", "team:2"])
        #expect(failures(result) == ["carol": "FORBIDDEN", "": "INVALID_ARGUMENT"])
    }

    @Test("subscribeUserStatus: FORBIDDEN outside users (nothing subscribed), CANNOT_SUBSCRIBE_SELF for the own id")
    func subscribeUserStatus() throws {
        let (_, alice) = try world(#""users":["bob"]"#)
        let result = try alice.ok("subscribeUserStatus", [("userIds", ["bob", "carol", "alice"])])
        #expect(ids(result["statuses"]) == ["bob"])
        #expect(failures(result) == ["carol": "FORBIDDEN", "alice": "CANNOT_SUBSCRIBE_SELF"])
        let subscriptions = try alice.ok("getSubscriptions")
        #expect(subscriptions["subscriptions"]?.arrayValue?.compactMap { $0.string("userId") } == ["bob"])
    }

    @Test("getUserChannels: another user outside users is FORBIDDEN; the list and totalChannel hold only the channels the token covers")
    func getUserChannels() throws {
        let (_, alice) = try world(#""users":["bob","team:*"],"channels":["room:*"]"#)
        // (alice herself is in room:2 only.)
        #expect(alice.errorCode("getUserChannels", [("userId", "carol")]) == "FORBIDDEN")
        let bob = try alice.ok("getUserChannels", [("userId", "bob")])
        #expect(bob == ["totalChannel": 1, "channels": [["channel": "room:1", "channelType": "message"]]])
        #expect(try alice.ok("getUserChannels", [("userId", "alice")])["totalChannel"] == 1)
        // A user in no channel the token covers: an empty list, not an error.
        let (_, narrow) = try world(#""channels":["room:2"]"#)
        #expect(try narrow.ok("getUserChannels", [("userId", "carol")]) == ["totalChannel": 0, "channels": []])
    }

    @Test("getOnlineUsers and getState of a channel outside channels: FORBIDDEN; inside: answered")
    func channelReads() throws {
        let (_, alice) = try world(#""channels":["room:*"]"#)
        #expect(alice.errorCode("getOnlineUsers", [("channel", "lobby")]) == "FORBIDDEN")
        #expect(alice.errorCode("getOnlineUsers", [("channel", "lobby"), ("includeUserId", false)]) == "FORBIDDEN")
        #expect(alice.errorCode("getState", [("channel", "lobby"), ("userId", "bob")]) == "FORBIDDEN")
        #expect(alice.errorCode("getOnlineUsers", [("channel", "room:1"), ("channelType", "stream")]) == nil)
        #expect(ids(try alice.ok("getOnlineUsers", [("channel", "room:1")])["users"]) == ["bob", "carol", "team:1"])
        #expect(alice.errorCode("getState", [("channel", "room:1"), ("userId", "bob")]) == nil)
    }

    @Test("no users or channels claim reads everything; a refresh changes what later reads may see")
    func refreshChangesReads() throws {
        let (_, alice) = try world("")
        #expect(failures(try alice.ok("getUserStatus", [("userIds", ["carol"])])).isEmpty)
        #expect(try alice.ok("getUserChannels", [("userId", "carol")])["totalChannel"] == 2)
        try alice.ok("getOnlineUsers", [("channel", "lobby")])
        try alice.ok("refresh", [("token", .string(F.token(ttl: 7200, extra: #""users":[],"channels":["room:2"]"#)))])
        #expect(failures(try alice.ok("getUserStatus", [("userIds", ["carol", "alice"])])) == ["carol": "FORBIDDEN"])
        #expect(alice.errorCode("getOnlineUsers", [("channel", "lobby")]) == "FORBIDDEN")
        #expect(try alice.ok("getUserChannels", [("userId", "alice")])["totalChannel"] == 1)
    }
}
