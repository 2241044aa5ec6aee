import RollcallProtocol
import Testing
@testable import RollcallCore

/// The token `info` claim (PROTOCOL §3, 1.1) in every presence listing: `join` events,
/// snapshots (announce, interval and truncated), `getOnlineUsers` and `interval.joinInfo`;
/// taken from the session whose join made the user a member; refused over `auth.maxInfoBytes`.
@Suite("Auth: token info in presence listings")
struct TokenInfoTests {
    typealias F = AuthFixture

    /// jwt mode; interval mode above 3 members (back at 2), 1 s intervals.
    private func harness(snapshotMax: Int = 1000, maxInfoBytes: Int = 1024) -> PresenceHarness {
        PresenceHarness(authenticator: JWTAuthenticator(secret: F.secret, maxInfoBytes: maxInfoBytes)) {
            $0.presence.maxInstantEvents = 3
            $0.presence.hysteresis = 1
            $0.presence.intervalSeconds = 1
            $0.presence.snapshotMaxMembers = snapshotMax
            $0.auth.maxInfoBytes = maxInfoBytes
        }
    }

    /// `{"name": name}`.
    private func info(_ name: String) -> JSON { ["name": .string(name)] }

    /// Logs `user` in with a token whose info is `{"name": name}` (no info when nil).
    private func login(_ harness: PresenceHarness, _ user: String, name: String?) throws -> HarnessClient {
        let extra = name.map { #""info":{"name":"\#($0)"}"# } ?? ""
        return try harness.login(user, ["token": .string(F.token(sub: user, extra: extra))])
    }

    /// `userId → info` of a listing's entries (entries without info are left out).
    private func infos(_ entries: JSON?) -> [String: JSON] {
        var map: [String: JSON] = [:]
        for entry in entries?.arrayValue ?? [] { if let info = entry["info"] { map[entry.string("userId") ?? "?"] = info } }
        return map
    }

    @Test("announce mode: join event, snapshot and getOnlineUsers (with and without state) carry info; a user without one has none")
    func announceListings() throws {
        let harness = harness()
        let alice = try login(harness, "alice", name: "Alice")
        let bob = try login(harness, "bob", name: nil)
        try bob.ok("join", [("channel", "room")])
        _ = bob.events()
        try alice.ok("join", [("channel", "room")])
        let join = try #require(bob.presenceEvents().first)
        #expect(join.string("type") == "join")
        #expect(join["info"] == info("Alice"))
        let snapshot = try #require(alice.presenceEvents().first { $0.string("type") == "snapshot" })
        #expect(infos(snapshot["snapshot"]) == ["alice": info("Alice")])
        #expect(snapshot["snapshot"]?.arrayValue?.count == 2)
        for includeState in [false, true] {
            let page = try bob.ok("getOnlineUsers", [("channel", "room"), ("includeState", .bool(includeState))])
            #expect(infos(page["users"]) == ["alice": info("Alice")], "includeState \(includeState)")
        }
        // Leave and timeout carry no info; nor does a join of a user without one.
        try alice.ok("leave", [("channel", "room")])
        #expect(bob.presenceEvents().map { $0["info"] } == [nil])
    }

    @Test("the info is the one of the session whose join made the user a member; a refresh shows from the next such join")
    func infoOfTheFirstJoin() throws {
        let harness = harness()
        let watcher = try login(harness, "watcher", name: nil)
        try watcher.ok("join", [("channel", "room")])
        let phone = try login(harness, "alice", name: "Alice (phone)")
        let laptop = try login(harness, "alice", name: "Alice (laptop)")
        try phone.ok("join", [("channel", "room")])
        try laptop.ok("join", [("channel", "room")])
        func shown() throws -> JSON? { infos(try watcher.ok("getOnlineUsers", [("channel", "room")])["users"])["alice"] }
        #expect(try shown() == info("Alice (phone)"))
        // The phone leaves: alice is still a member through the laptop, with the same info.
        try phone.ok("leave", [("channel", "room")])
        #expect(try shown() == info("Alice (phone)"))
        // A refresh changes nothing shown until its session's join makes alice a member again.
        try laptop.ok("refresh", [("token", .string(F.token(sub: "alice", ttl: 7200, extra: #""info":{"name":"Alice B."}"#)))])
        #expect(try shown() == info("Alice (phone)"))
        try laptop.ok("leave", [("channel", "room")])
        _ = watcher.events()
        try laptop.ok("join", [("channel", "room")])
        #expect(watcher.presenceEvents().first?["info"] == info("Alice B."))
        #expect(try shown() == info("Alice B."))
    }

    @Test("interval mode: joinInfo lists the joiners that have info; the snapshot at the last event and a truncated one carry info")
    func intervalListings() throws {
        let harness = harness(snapshotMax: 2)
        var clients: [HarnessClient] = []
        for (user, name) in [("u1", "One"), ("u2", nil), ("u3", "Three")] {
            let client = try login(harness, user, name: name)
            try client.ok("join", [("channel", "room")])
            clients.append(client)
        }
        for client in clients { _ = client.events() }
        // u4 and u5 push the channel into interval mode.
        let u4 = try login(harness, "u4", name: "Four")
        try u4.ok("join", [("channel", "room")])
        let u5 = try login(harness, "u5", name: nil)
        try u5.ok("join", [("channel", "room")])
        // The snapshot u5 gets shows the roster as of the last event (u1..u3) plus itself,
        // cut at 2 members: truncated, with info.
        let snapshot = try #require(u5.presenceEvents().first { $0.string("type") == "snapshot" })
        #expect(snapshot["truncated"] == true)
        #expect(snapshot["snapshot"]?.arrayValue?.compactMap { $0.string("userId") } == ["u1", "u2"])
        #expect(infos(snapshot["snapshot"]) == ["u1": info("One")])
        harness.advance(seconds: 1)
        let interval = try #require(clients[0].presenceEvents().first { $0.string("type") == "interval" })
        #expect(interval["interval"]?["join"] == ["u4", "u5"])
        #expect(interval["interval"]?["joinInfo"] == ["u4": info("Four")])
        // After the event, a fresh snapshot (truncated) and the listings carry info too.
        let u6 = try login(harness, "u6", name: "Six")
        try u6.ok("join", [("channel", "room"), ("presence", true)])
        let after = try #require(u6.presenceEvents().first { $0.string("type") == "snapshot" })
        #expect(infos(after["snapshot"]) == ["u1": info("One")])
        let page = try u6.ok("getOnlineUsers", [("channel", "room"), ("pageSize", 10)])
        #expect(infos(page["users"]) == ["u1": info("One"), "u3": info("Three"), "u4": info("Four"), "u6": info("Six")])
        // A departure pending in the interval keeps its info in the roster at the last event.
        try clients[0].ok("leave", [("channel", "room")])
        let u7 = try login(harness, "u7", name: nil)
        try u7.ok("join", [("channel", "room")])
        let pendingSnapshot = try #require(u7.presenceEvents().first { $0.string("type") == "snapshot" })
        #expect(infos(pendingSnapshot["snapshot"]) == ["u1": info("One")])
        // u1 comes back within the interval with another info: the roster as of the last
        // event still shows the old one, in snapshots and in listings alike.
        let u1Again = try login(harness, "u1", name: "One again")
        try u1Again.ok("join", [("channel", "room")])
        let u8 = try login(harness, "u8", name: nil)
        try u8.ok("join", [("channel", "room")])
        let rejoinSnapshot = try #require(u8.presenceEvents().first { $0.string("type") == "snapshot" })
        #expect(infos(rejoinSnapshot["snapshot"]) == ["u1": info("One")])
        #expect(infos(try u8.ok("getOnlineUsers", [("channel", "room"), ("pageSize", 1)])["users"]) == ["u1": info("One")])
        harness.advance(seconds: 1)
        #expect(infos(try u8.ok("getOnlineUsers", [("channel", "room"), ("pageSize", 1)])["users"]) == ["u1": info("One again")])
    }

    @Test("info over auth.maxInfoBytes: login refused (UNAUTHORIZED, 4401); refresh refused with the connection kept")
    func overTheLimit() throws {
        let harness = harness(maxInfoBytes: 32)
        let big = #""info":{"name":"\#(String(repeating: "x", count: 30))"}"#
        let connection = ConnectionID(700)
        harness.run(.opened(connection))
        harness.run(.received(connection, JSON.object(["id": 1, "op": "login", "userId": "alice",
                                                        "token": .string(F.token(extra: big))]).encoded()))
        #expect(harness.closes[connection] == .unauthorized)
        let alice = try login(harness, "alice", name: "Al")
        #expect(alice.errorCode("refresh", [("token", .string(F.token(ttl: 7200, extra: big)))]) == "UNAUTHORIZED")
        #expect(harness.closes[alice.connection] == nil)
        try alice.ok("join", [("channel", "room")])
        #expect(infos(try alice.ok("getOnlineUsers", [("channel", "room")])["users"]) == ["alice": info("Al")])
    }
}
