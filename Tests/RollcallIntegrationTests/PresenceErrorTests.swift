import Foundation
import RollcallClient
import RollcallCore
import RollcallProtocol
import Testing

/// Every presence error code of PROTOCOL §7 through the real binary; a refused request
/// changes nothing.
@Suite("Presence errors", .serialized)
struct PresenceErrorTests {
    @Test("INVALID_ARGUMENT: bad channel, channelType, pageSize, cursor, empty key, includeState without ids", arguments: Topology.singleAndCluster)
    func invalidArgument(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let cases: [(String, JSON)] = [
            ("join", ["channel": ""]),
            ("join", ["channel": .string(String(repeating: "c", count: 129))]),
            ("join", ["channel": "tab\there"]),
            ("join", ["channel": "lobby", "channelType": "video"]),
            ("setState", ["channel": "lobby", "state": ["": "x"]]),
            ("getOnlineUsers", ["channel": "lobby", "pageSize": 0]),
            ("getOnlineUsers", ["channel": "lobby", "pageSize": 1001]),
            ("getOnlineUsers", ["channel": "lobby", "page": "not-a-cursor"]),
            ("getOnlineUsers", ["channel": "lobby", "includeUserId": false, "includeState": true]),
            ("getState", ["channel": "lobby", "userId": ""]),
            ("getUserChannels", ["userId": .string(String(repeating: "u", count: 129))]),
        ]
        for (op, args) in cases {
            let reply = try alice.request(op, args, timeout: presenceDeadline)
            #expect(reply.errorCode == .invalidArgument, "\(op) \(args.compactString) → \(reply)")
        }
        #expect(try alice.request("getUserChannels", ["userId": "alice"])["totalChannel"]?.numberValue?.intValue == 0)
    }

    @Test("INVALID_REQUEST: wrong JSON types and missing arguments", arguments: Topology.singleAndCluster)
    func invalidRequest(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let cases: [(String, JSON)] = [
            ("join", [:]),
            ("join", ["channel": 5]),
            ("join", ["channel": "lobby", "presence": "yes"]),
            ("join", ["channel": "lobby", "state": ["k": 1]]),
            ("join", ["channel": "lobby", "state": "k=v"]),
            ("setState", ["channel": "lobby"]),
            ("removeState", ["channel": "lobby"]),
            ("removeState", ["channel": "lobby", "keys": [1]]),
            ("publish", ["channel": "lobby"]),
            ("getState", ["channel": "lobby"]),
            ("getOnlineUsers", ["channel": "lobby", "pageSize": "10"]),
            ("getUserChannels", [:]),
        ]
        for (op, args) in cases {
            let reply = try alice.request(op, args, timeout: presenceDeadline)
            #expect(reply.errorCode == .invalidRequest, "\(op) \(args.compactString) → \(reply)")
        }
        #expect(try alice.request("getUserChannels", ["userId": "alice"])["totalChannel"]?.numberValue?.intValue == 0, "nothing was joined")
    }

    @Test("NOT_IN_CHANNEL: leave without join; publish to a stream channel without membership", arguments: Topology.singleAndCluster)
    func notInChannel(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        #expect(try alice.channelOp("leave", "lobby").errorCode == .notInChannel)
        #expect(try alice.join("lobby").ok)
        #expect(try alice.channelOp("leave", "lobby", stream: true).errorCode == .notInChannel, "the stream channel is another one")
        #expect(try alice.channelOp("publish", "lobby", stream: true, ["message": "x"]).errorCode == .notInChannel)
        #expect(try alice.channelOp("leave", "lobby").ok)
        #expect(try alice.channelOp("leave", "lobby").errorCode == .notInChannel)
    }

    @Test("USER_NOT_PRESENT: getState of a user who is not a member", arguments: Topology.singleAndCluster)
    func userNotPresent(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"]).errorCode == .userNotPresent)
        #expect(try alice.join("lobby").ok)
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"]).errorCode == .userNotPresent)
        #expect(try alice.channelOp("getState", "lobby", ["userId": "alice"]).ok)
    }

    @Test("state limits: TOO_MANY_KEYS, KEY_TOO_LONG, VALUE_TOO_LONG, STATE_TOO_LARGE; the state is unchanged", arguments: Topology.singleAndCluster)
    func stateLimits(topology: Topology) throws {
        let broker = try topology.start(config: ["state": ["maxKeys": 3, "maxKeyBytes": 4, "maxValueBytes": 6, "maxTotalBytes": 20]])
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        #expect(try alice.join("lobby", state: ["a": "1", "b": "2"]).ok)
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")

        let refusals: [(JSONObject, ErrorCode)] = [
            (["c": "3", "d": "4"], .tooManyKeys),          // 4 keys after the merge
            (["longer": "2"], .keyTooLong),                 // 6-byte key
            (["c": "1234567"], .valueTooLong),              // 7-byte value
            (["a": "111111", "b": "222222"], .stateTooLarge), // 7 + 7 + 7 = 21 bytes after the merge
        ]
        #expect(try alice.channelOp("setState", "lobby", ["state": ["c": "123456"]]).ok) // 1+1+1+1+1+6 = 11 bytes
        _ = try bob.presenceEvent("stateChanged", channel: "lobby", publisher: "alice")
        for (state, code) in refusals {
            let reply = try alice.channelOp("setState", "lobby", ["state": .object(state)])
            #expect(reply.errorCode == code, "\(JSON.object(state).compactString) → \(reply)")
            let joinReply = try alice.join("lobby", state: stringMap(.object(state)))
            #expect(joinReply.errorCode == code, "join with \(JSON.object(state).compactString) → \(joinReply)")
        }
        #expect(try alice.channelOp("getState", "lobby", ["userId": "alice"])["state"] == ["a": "1", "b": "2", "c": "123456"])
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "refused changes send nothing")
        // Pending state obeys the same limits.
        #expect(try alice.channelOp("setState", "later", ["state": ["a": "1", "b": "2", "c": "3", "d": "4"]]).errorCode == .tooManyKeys)
        #expect(try alice.channelOp("removeState", "later", ["keys": ["a"]]).result == ["state": [:]], "nothing was held")
    }

    @Test("TOO_MANY_PENDING_STATES: state held before joining for too many channels", arguments: Topology.singleAndCluster)
    func tooManyPendingStates(topology: Topology) throws {
        let broker = try topology.start(config: ["state": ["maxPendingChannels": 2]])
        let alice = try broker.session("alice")
        #expect(try alice.channelOp("setState", "one", ["state": ["k": "v"]])["pending"]?.boolValue == true)
        #expect(try alice.channelOp("setState", "two", ["state": ["k": "v"]])["pending"]?.boolValue == true)
        #expect(try alice.channelOp("setState", "three", ["state": ["k": "v"]]).errorCode == .tooManyPendingStates)
        #expect(try alice.channelOp("setState", "two", ["state": ["k2": "v"]]).ok, "updating a held one is fine")
        // Joining applies (and frees) one.
        #expect(try alice.join("one").ok)
        #expect(try alice.channelOp("setState", "three", ["state": ["k": "v"]])["pending"]?.boolValue == true)
        #expect(try alice.channelOp("getState", "one", ["userId": "alice"])["state"] == ["k": "v"])
    }

    @Test("TOO_MANY_CHANNELS: one join beyond limits.maxChannelsPerSession; rejoining is not counted", arguments: Topology.singleAndCluster)
    func tooManyChannels(topology: Topology) throws {
        let broker = try topology.start(config: ["limits": ["maxChannelsPerSession": 2]])
        let alice = try broker.session("alice")
        #expect(try alice.join("one").ok)
        #expect(try alice.join("one", stream: true).ok)
        #expect(try alice.join("two").errorCode == .tooManyChannels)
        #expect(try alice.join("one").ok, "a repeated join is not a new channel")
        #expect(try alice.request("getUserChannels", ["userId": "alice"])["totalChannel"]?.numberValue?.intValue == 2)
        #expect(try alice.channelOp("leave", "one").ok)
        #expect(try alice.join("two").ok)
    }

    @Test("MESSAGE_TOO_LARGE: publish over limits.maxMessageBytes, compact-encoded", arguments: Topology.singleAndCluster)
    func messageTooLarge(topology: Topology) throws {
        let broker = try topology.start(config: ["limits": ["maxMessageBytes": 16]])
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        let fits: JSON = .string(String(repeating: "x", count: 14)) // "xxxxxxxxxxxxxx" = 16 bytes
        #expect(try alice.channelOp("publish", "lobby", ["message": fits])["recipients"]?.numberValue?.intValue == 1)
        let tooBig: JSON = .string(String(repeating: "x", count: 15))
        #expect(try alice.channelOp("publish", "lobby", ["message": tooBig]).errorCode == .messageTooLarge)
        #expect(try alice.channelOp("publish", "lobby", ["message": ["list": [1, 2, 3, 4, 5]]]).errorCode == .messageTooLarge)
        // On a cluster bob's node hears the message through Redis: a ping to it is no barrier
        // for that, so wait for it; then nothing more came (the refused ones went nowhere).
        #expect(try bob.waitForEvent(timeout: .seconds(5), where: { $0.name == "message" })["message"] == fits)
        #expect(try bob.eventsAfterBarrier().filter { $0.name == "message" }.isEmpty)
    }

    @Test("FORBIDDEN: join, publish, setState and getOnlineUsers outside the token's channels (auth.mode jwt)", arguments: Topology.singleAndCluster)
    func forbidden(topology: Topology) throws {
        let secret = "integration-test-secret-of-32-bytes!"
        let broker = try topology.start(config: ["auth": ["mode": "jwt", "secret": secret]])
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let token = JWTMinter.mint(secret: secret, userId: "alice", channels: ["room:*"], ttlSeconds: 600, now: now)
        let alice = try broker.connect()
        #expect(try alice.login(userId: "alice", token: token).ok)
        #expect(try alice.join("room:1").ok)
        #expect(try alice.join("lobby").errorCode == .forbidden)
        #expect(try alice.channelOp("publish", "lobby", ["message": "x"]).errorCode == .forbidden)
        #expect(try alice.channelOp("setState", "lobby", ["state": ["k": "v"]]).errorCode == .forbidden)
        #expect(try alice.channelOp("setState", "room:1", ["state": ["k": "v"]]).ok)
        #expect(try alice.channelOp("getOnlineUsers", "lobby").errorCode == .forbidden, "reads are limited too (1.1)")
        #expect(try alice.channelOp("getOnlineUsers", "room:1").ok)
        #expect(try alice.request("getUserChannels", ["userId": "alice"])["totalChannel"]?.numberValue?.intValue == 1)
    }
}
