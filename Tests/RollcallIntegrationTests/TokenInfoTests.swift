import Foundation
import RollcallClient
import RollcallCore
import RollcallProtocol
import Testing

/// The token `info` claim (PROTOCOL §3, 1.1) through the real binary: shown in `join` events,
/// snapshots (truncated too), `getOnlineUsers` and `interval.joinInfo`, on one node and on a
/// cluster (where it travels in Redis with the member, so every node shows it).
@Suite("Token info", .serialized)
struct TokenInfoIntegrationTests {
    static let secret = "integration-test-secret-of-32-bytes!"

    /// jwt mode; interval mode above 2 members; snapshots cut at 2; info at most 64 bytes.
    static let config: [String: Any] = [
        "auth": ["mode": "jwt", "secret": secret, "maxInfoBytes": 64],
        "presence": ["maxInstantEvents": 2, "hysteresis": 1, "intervalSeconds": 0.2, "snapshotMaxMembers": 2],
    ]

    private func token(_ user: String, info: JSONObject?) -> String {
        JWTMinter.mint(secret: Self.secret, userId: user, info: info, ttlSeconds: 600, now: Int64(Date().timeIntervalSince1970 * 1000))
    }

    private func login(_ broker: any BrokerUnderTest, _ user: String, name: String?) throws -> RollcallConnection {
        let connection = try broker.connect()
        let reply = try connection.login(userId: user, token: token(user, info: name.map { ["name": .string($0)] }))
        #expect(reply.ok, "\(reply)")
        return connection
    }

    /// `userId → info.name` of a listing.
    private func names(_ entries: JSON?) -> [String: String] {
        var map: [String: String] = [:]
        for entry in entries?.arrayValue ?? [] {
            if let name = entry["info"]?["name"]?.stringValue, let user = entry["userId"]?.stringValue { map[user] = name }
        }
        return map
    }

    @Test("info in join events, snapshots (truncated too), getOnlineUsers and interval joinInfo", arguments: Topology.singleAndCluster)
    func infoInEveryListing(topology: Topology) throws {
        let broker = try topology.start(config: Self.config)
        let bob = try login(broker, "bob", name: nil)
        let alice = try login(broker, "alice", name: "Alice")
        let carol = try login(broker, "carol", name: "Carol")
        #expect(try bob.join("room").ok)
        #expect(try alice.join("room").ok)
        let join = try bob.presenceEvent("join", channel: "room", publisher: "alice")
        #expect(join["info"] == ["name": "Alice"])
        let snapshot = try alice.presenceEvent("snapshot", channel: "room")
        #expect(names(snapshot["snapshot"]) == ["alice": "Alice"])
        for includeState in [false, true] {
            let page = try bob.channelOp("getOnlineUsers", "room", ["includeState": .bool(includeState)])
            #expect(names(page["users"]) == ["alice": "Alice"], "includeState \(includeState) \(page)")
        }

        // carol is the third member: interval mode; her info comes in joinInfo.
        #expect(try carol.join("room").ok)
        let interval = try bob.presenceEvent("interval", channel: "room")
        #expect(interval["interval"]?["join"] == ["carol"])
        #expect(interval["interval"]?["joinInfo"] == ["carol": ["name": "Carol"]])
        // A truncated snapshot (2 of 3 shown) carries info.
        let carolSnapshot = try carol.presenceEvent("snapshot", channel: "room")
        #expect(carolSnapshot["truncated"] == true)
        #expect(carolSnapshot["snapshot"]?.arrayValue?.compactMap { $0["userId"]?.stringValue } == ["alice", "bob"])
        #expect(names(carolSnapshot["snapshot"]) == ["alice": "Alice"])
        let all = try carol.channelOp("getOnlineUsers", "room")
        #expect(names(all["users"]) == ["alice": "Alice", "carol": "Carol"])
    }

    @Test("info over auth.maxInfoBytes is refused: UNAUTHORIZED at login, and at refresh with the connection kept", arguments: Topology.singleAndCluster)
    func overTheLimit(topology: Topology) throws {
        let broker = try topology.start(config: Self.config)
        let big: JSONObject = ["name": .string(String(repeating: "x", count: 64))]
        let refused = try broker.connect()
        let reply = try refused.login(userId: "alice", token: token("alice", info: big))
        #expect(reply.errorCodeText == "UNAUTHORIZED")
        #expect(reply.errorMessage?.contains("info") == true, "\(reply)")
        let alice = try login(broker, "alice", name: "Al")
        #expect(try alice.refresh(token: token("alice", info: big)).errorCodeText == "UNAUTHORIZED")
        #expect(try alice.request("ping").ok)
    }

    @Test("interval mode: a member who leaves and comes back with another info inside an interval shows the old info in the roster as of the last event",
          arguments: Topology.singleAndCluster)
    func infoAtTheLastEvent(topology: Topology) throws {
        var config = Self.config
        config["presence"] = ["maxInstantEvents": 2, "hysteresis": 1, "intervalSeconds": 2, "snapshotMaxMembers": 100]
        let broker = try topology.start(config: config)
        let bob = try login(broker, "bob", name: nil)
        let carol = try login(broker, "carol", name: nil)
        #expect(try bob.join("room").ok)
        #expect(try carol.join("room").ok)
        let phone = try login(broker, "alice", name: "Alice")
        #expect(try phone.join("room").ok)
        // The interval event that makes alice a member of the roster "as of the last event".
        let first = try bob.presenceEvent("interval", channel: "room")
        #expect(first["interval"]?["joinInfo"] == ["alice": ["name": "Alice"]])
        #expect(try phone.channelOp("leave", "room").ok)
        let laptop = try login(broker, "alice", name: "Alice 2")
        #expect(try laptop.join("room").ok)
        let dave = try login(broker, "dave", name: nil)
        #expect(try dave.join("room").ok)
        let snapshot = try dave.presenceEvent("snapshot", channel: "room")
        #expect(names(snapshot["snapshot"]) == ["alice": "Alice"], "\(snapshot)")
        // The listing is the roster as of the last event too (protocol.md §7.7).
        #expect(names(try dave.channelOp("getOnlineUsers", "room")["users"]) == ["alice": "Alice"])
    }

    @Test("a user's info is the one of the session whose join made the user a member (sessions on different nodes in a cluster)",
          arguments: Topology.singleAndCluster)
    func infoOfTheFirstJoin(topology: Topology) throws {
        let broker = try topology.start(config: Self.config)
        let watcher = try login(broker, "watcher", name: nil)
        let phone = try login(broker, "alice", name: "Alice (phone)")
        let laptop = try login(broker, "alice", name: "Alice (laptop)")
        #expect(try phone.join("room").ok)
        #expect(try laptop.join("room").ok)
        func shown() throws -> String? { names(try watcher.channelOp("getOnlineUsers", "room")["users"])["alice"] }
        #expect(try shown() == "Alice (phone)")
        #expect(try phone.channelOp("leave", "room").ok)
        #expect(try shown() == "Alice (phone)", "still a member through the laptop, with the same info")
        #expect(try laptop.channelOp("leave", "room").ok)
        #expect(try laptop.join("room").ok)
        #expect(try shown() == "Alice (laptop)")
    }
}
