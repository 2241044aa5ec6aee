import Foundation
import RollcallClient
import RollcallCore
import RollcallProtocol
import Testing

/// Read permissions (PROTOCOL §3, 1.1) through the real binary, on one node and on a cluster:
/// the token's `users` globs on getUserStatus, subscribeUserStatus and another user's
/// getUserChannels; its `channels` globs on getOnlineUsers, getState and getUserChannels' list.
@Suite("Read permissions", .serialized)
struct ReadPermissionIntegrationTests {
    static let secret = "integration-test-secret-of-32-bytes!"

    private func token(_ user: String, channels: [String]? = nil, users: [String]? = nil) -> String {
        JWTMinter.mint(secret: Self.secret, userId: user, channels: channels, users: users, ttlSeconds: 600,
                       now: Int64(Date().timeIntervalSince1970 * 1000))
    }

    @Test("every read op under users and channels globs, with the failed entries", arguments: Topology.singleAndCluster)
    func readOps(topology: Topology) throws {
        let broker = try topology.start(config: ["auth": ["mode": "jwt", "secret": Self.secret]])
        for user in ["bob", "carol"] {
            let connection = try broker.connect()
            #expect(try connection.login(userId: user, token: token(user)).ok)
            #expect(try connection.join("lobby", state: ["k": "v"]).ok)
            #expect(try connection.join("room:1", state: ["k": "v"]).ok)
        }
        let alice = try broker.connect()
        #expect(try alice.login(userId: "alice", token: token("alice", channels: ["room:*"], users: ["b*"])).ok)

        let statuses = try alice.request("getUserStatus", ["userIds": ["alice", "bob", "carol", ""]])
        #expect(statuses.statuses.compactMap(\.userIdText) == ["alice", "bob"])
        #expect(statuses.failures == ["carol": "FORBIDDEN", "": "INVALID_ARGUMENT"])
        let subscribed = try alice.subscribe(["bob", "carol"])
        #expect(subscribed.statuses.compactMap(\.userIdText) == ["bob"])
        #expect(subscribed.failures == ["carol": "FORBIDDEN"])

        #expect(try alice.request("getUserChannels", ["userId": "carol"]).errorCodeText == "FORBIDDEN")
        let bobChannels = try alice.request("getUserChannels", ["userId": "bob"])
        #expect(bobChannels["totalChannel"]?.numberValue?.intValue == 1)
        #expect(bobChannels["channels"] == [["channel": "room:1", "channelType": "message"]])

        #expect(try alice.channelOp("getOnlineUsers", "lobby").errorCodeText == "FORBIDDEN")
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"]).errorCodeText == "FORBIDDEN")
        let room = try alice.channelOp("getOnlineUsers", "room:1")
        #expect((room["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue } == ["bob", "carol"])
        #expect(try alice.channelOp("getState", "room:1", ["userId": "carol"])["state"] == ["k": "v"])

        // A refresh without the claims lifts the limits for later reads.
        #expect(try alice.refresh(token: token("alice")).ok)
        #expect(try alice.request("getUserStatus", ["userIds": ["carol"]]).failures.isEmpty)
        #expect(try alice.channelOp("getOnlineUsers", "lobby").ok)
        #expect(try alice.request("getUserChannels", ["userId": "carol"])["totalChannel"]?.numberValue?.intValue == 2)
    }
}
