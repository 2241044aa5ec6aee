@testable import RollcallCore
import RollcallProtocol
import Testing

/// The server API in the core (PROTOCOL §10): `.api` in, `.respond` out, on a manual clock.
@Suite("Server API (core)")
struct ServerAPICoreTests {
    private func makeHarness() -> PresenceHarness {
        PresenceHarness { $0.presence.timeoutSeconds = 2 }
    }

    private func code(_ answer: (status: Int, body: JSON)) -> String? {
        answer.body["error"]?["code"]?.stringValue
    }

    @Test("an unknown op (a WebSocket-only op too) is 404 UNKNOWN_OP, whatever the body")
    func unknownOps() {
        let harness = makeHarness()
        for op in ["nope", "join", "login", "", "getInfo/x"] {
            let answer = harness.apiRaw(op, Array("not json".utf8))
            #expect(answer.status == 404, "\(op)")
            #expect(code(answer) == "UNKNOWN_OP")
            #expect(answer.body["ok"] == .bool(false))
        }
    }

    @Test("a body that is not JSON is 400 INVALID_JSON; not an object, 400 INVALID_REQUEST; empty is {}")
    func malformedBodies() {
        let harness = makeHarness()
        #expect(code(harness.apiRaw("getInfo", Array("{".utf8))) == "INVALID_JSON")
        #expect(harness.apiRaw("getInfo", Array("{".utf8)).status == 400)
        #expect(code(harness.apiRaw("getInfo", Array("[1]".utf8))) == "INVALID_REQUEST")
        #expect(harness.apiRaw("getInfo", []).status == 200)
        #expect(harness.apiRaw("getInfo", Array(" \n".utf8)).status == 200)
        let wrongType = harness.api("getState", ["channel": 5, "userId": "bob"])
        #expect(wrongType.status == 400 && code(wrongType) == "INVALID_REQUEST")
        let badName = harness.api("getUserChannels", ["userId": ""])
        #expect(badName.status == 400 && code(badName) == "INVALID_ARGUMENT")
        let missing = harness.api("publish", ["channel": "a"])
        #expect(missing.status == 400 && code(missing) == "INVALID_REQUEST")
    }

    @Test("a body holds only the op's arguments: another member is 400 INVALID_REQUEST naming it; each argument as null counts as absent")
    func onlyTheOpsArguments() {
        let harness = makeHarness()
        let required: [ServerAPIOp: JSONObject] = [
            .publish: JSONObject([("channel", "room"), ("message", 1)]), .getOnlineUsers: JSONObject([("channel", "room")]),
            .getState: JSONObject([("channel", "room"), ("userId", "bob")]), .getUserChannels: JSONObject([("userId", "bob")]),
            .getUserStatus: JSONObject([("userIds", ["bob"])]), .disconnectUser: JSONObject([("userId", "bob")]),
        ]
        for op in ServerAPIOp.allCases {
            var body = required[op] ?? JSONObject()
            for argument in op.arguments where body[argument] == nil { body[argument] = .null }
            let taken = harness.api(op.rawValue, .object(body))
            #expect(taken.status == 200 || code(taken) == "USER_NOT_PRESENT", "\(op): \(taken.body.compactString)")
            for extra in ["pagesize", "id", "op", "Channel", "channel\u{301}"] where !op.takes(extra) {
                var wrong = required[op] ?? JSONObject()
                wrong[extra] = .null
                let refused = harness.api(op.rawValue, .object(wrong))
                #expect(refused.status == 400 && code(refused) == "INVALID_REQUEST", "\(op) \(extra)")
                #expect(refused.body["error"]?["message"]?.stringValue?.contains(extra) == true)
            }
        }
    }

    @Test("publish from the server: every messages subscriber gets it with the given publisher, stream channels too")
    func publishFromServer() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        let carol = try harness.login("carol")
        try bob.ok("join", [("channel", "room")])
        try carol.ok("join", [("channel", "room"), ("messages", false)])
        try bob.ok("join", [("channel", "live"), ("channelType", "stream")])
        _ = bob.events(); _ = carol.events()

        let plain = harness.api("publish", ["channel": "room", "message": ["text": "hi"]])
        #expect(plain.status == 200)
        #expect(plain.body["result"]?["recipients"] == .int(1))
        let event = try #require(bob.events().first)
        #expect(event["event"] == "message")
        #expect(event["publisher"] == "server")
        #expect(event["message"]?["text"] == "hi")
        #expect(carol.events().isEmpty)

        let named = harness.api("publish", ["channel": "live", "channelType": "stream", "message": 1, "publisher": "ops-bot"])
        #expect(named.body["result"]?["recipients"] == .int(1))
        #expect(bob.events().first?["publisher"] == "ops-bot")

        let nobody = harness.api("publish", ["channel": "empty", "channelType": "stream", "message": 1])
        #expect(nobody.status == 200 && nobody.body["result"]?["recipients"] == .int(0))
        let badPublisher = harness.api("publish", ["channel": "room", "message": 1, "publisher": ""])
        #expect(badPublisher.status == 400 && code(badPublisher) == "INVALID_ARGUMENT")
    }

    @Test("publish from the server: over limits.maxMessageBytes is 400 MESSAGE_TOO_LARGE; a held session keeps it")
    func publishLimitsAndHeldSessions() throws {
        let harness = PresenceHarness { $0.limits.maxMessageBytes = 16 }
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "room")])
        let tooLarge = harness.api("publish", ["channel": "room", "message": .string(String(repeating: "x", count: 32))])
        #expect(tooLarge.status == 400 && code(tooLarge) == "MESSAGE_TOO_LARGE")
        bob.drop()
        let held = harness.api("publish", ["channel": "room", "message": "kept"])
        #expect(held.body["result"]?["recipients"] == .int(0), "held sessions are not counted")
        let resumed = try harness.login("bob", ["resumeToken": .string(bob.resumeToken)])
        #expect(resumed.lastLoginResult?["resumed"] == .bool(true))
        #expect(resumed.events().contains { $0["event"] == "message" && $0["message"] == "kept" })
    }

    @Test("getOnlineUsers, getState, getUserChannels, getUserStatus answer as over WebSocket; getOnlineUsers carries seq")
    func sharedReads() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        let alice = try harness.login("alice")
        try bob.ok("join", [("channel", "room"), ("state", ["mood": "ok"])])
        try alice.ok("join", [("channel", "room")])
        for (op, body) in [
            ("getOnlineUsers", ["channel": "room", "includeState": true] as JSONObject),
            ("getOnlineUsers", ["channel": "nobody-here"]),
            ("getState", ["channel": "room", "userId": "bob"]),
            ("getUserChannels", ["userId": "bob"]),
        ] {
            let overWebSocket = try alice.ok(op, body.members.map { ($0.key, $0.value) })
            let overAPI = harness.api(op, .object(body))
            #expect(overAPI.status == 200)
            #expect(overAPI.body["result"] == overWebSocket, "\(op)")
        }
        let users = harness.api("getOnlineUsers", ["channel": "room"]).body["result"]
        #expect(users?["seq"] == .int(2), "two joins: seq 2")
        #expect(harness.api("getOnlineUsers", ["channel": "nobody-here"]).body["result"]?["seq"] == .int(0))
        let absent = harness.api("getState", ["channel": "room", "userId": "zed"])
        #expect(absent.status == 400 && code(absent) == "USER_NOT_PRESENT")

        let status = harness.api("getUserStatus", ["userIds": ["bob", "nobody", ""]])
        #expect(status.status == 200)
        let statuses = status.body["result"]?["statuses"]?.arrayValue ?? []
        #expect(statuses.map { $0["status"]?.stringValue } == ["online", "loggedOut"])
        #expect(status.body["result"]?["failed"]?.arrayValue?.count == 1)
        let tooMany = harness.api("getUserStatus", ["userIds": .array((0...500).map { .string("u\($0)") })])
        #expect(tooMany.status == 400 && code(tooMany) == "TOO_MANY_USERS")
    }

    @Test("the server API has no rate limit: many reads in one instant all succeed")
    func noRateLimit() throws {
        let harness = PresenceHarness { $0.userStatus.queryRate = .init(calls: 1, perSeconds: 60) }
        _ = try harness.login("bob")
        for _ in 0..<50 {
            #expect(harness.api("getUserStatus", ["userIds": ["bob", "alice"]]).status == 200)
        }
    }

    @Test("getChannels: channels with a member, message before stream, byte order, prefix, paged by cursor")
    func getChannelsPaging() throws {
        let harness = makeHarness()
        harness.broker.presence.liveChannels = LiveChannelIndex(chunkCapacity: 2)
        let bob = try harness.login("bob")
        var expected: [(String, String)] = []
        for name in ["room:b", "room:a", "room:c", "other", "room:", "roo"] {
            try bob.ok("join", [("channel", .string(name))])
        }
        for name in ["room:z", "room:y"] {
            try bob.ok("join", [("channel", .string(name)), ("channelType", "stream")])
        }
        expected = [("room:", "message"), ("room:a", "message"), ("room:b", "message"), ("room:c", "message"),
                    ("room:y", "stream"), ("room:z", "stream")]
        var seen: [(String, String)] = []
        var page: JSON = .null
        var pages = 0
        repeat {
            var body: JSONObject = ["prefix": "room:", "pageSize": 2]
            if case .string = page { body["page"] = page }
            let answer = harness.api("getChannels", .object(body))
            #expect(answer.status == 200)
            let result = try #require(answer.body["result"])
            for entry in result["channels"]?.arrayValue ?? [] {
                seen.append((entry["channel"]?.stringValue ?? "", entry["channelType"]?.stringValue ?? ""))
                #expect(entry["occupancy"] == .int(1))
                #expect(entry["mode"] == "announce")
                #expect(entry["seq"] == .int(1), "bob's join, the channel's one event")
            }
            page = result["nextPage"] ?? .null
            pages += 1
        } while page != .null && pages < 10
        #expect(seen.map(\.0) == expected.map(\.0))
        #expect(seen.map(\.1) == expected.map(\.1))
        #expect(pages == 3)

        let all = harness.api("getChannels").body["result"]?["channels"]?.arrayValue ?? []
        #expect(all.count == 8)
        try bob.ok("leave", [("channel", "room:a")])
        let after = harness.api("getChannels", ["prefix": "room:a"]).body["result"]
        #expect(after?["channels"]?.arrayValue?.isEmpty == true)
        #expect(after?["nextPage"] == .null)

        for bad in [["pageSize": 0] as JSONObject, ["pageSize": 1001], ["page": "u1.61"], ["page": "garbage"], ["prefix": 7]] {
            let answer = harness.api("getChannels", .object(bad))
            #expect(answer.status == 400, "\(bad)")
        }
    }

    @Test("disconnectUser: a live session is closed with 4403 and the reason, others see leave, status loggedOut")
    func disconnectLiveSession() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        let bobPhone = try harness.login("bob", ["platform": "ios"])
        let alice = try harness.login("alice")
        try bob.ok("join", [("channel", "room")])
        try bobPhone.ok("join", [("channel", "room")])
        try alice.ok("join", [("channel", "room")])
        _ = alice.events()

        let answer = harness.api("disconnectUser", ["userId": "bob", "reason": "banned"])
        #expect(answer.status == 200)
        #expect(answer.body["result"]?["sessions"] == .int(2))
        #expect(harness.closes[bob.connection] == .disconnectedByServer)
        #expect(harness.closes[bobPhone.connection] == .disconnectedByServer)
        #expect(harness.closeReasons[bob.connection] == "banned")
        let events = alice.presenceEvents()
        #expect(events.map { $0["type"]?.stringValue } == ["leave"])
        #expect(events.first?["publisher"] == "bob")
        let status = harness.api("getUserStatus", ["userIds": ["bob"]]).body["result"]?["statuses"]?.arrayValue?.first
        #expect(status?["status"] == "loggedOut")
        #expect(harness.api("getOnlineUsers", ["channel": "room"]).body["result"]?["totalOccupancy"] == .int(1))

        let nobody = harness.api("disconnectUser", ["userId": "nobody"])
        #expect(nobody.body["result"]?["sessions"] == .int(0))
        let defaultReason = try harness.login("carol")
        _ = harness.api("disconnectUser", ["userId": "carol"])
        #expect(harness.closeReasons[defaultReason.connection] == DisconnectUserRequest.defaultReason)
        let longReason = harness.api("disconnectUser", ["userId": "alice", "reason": .string(String(repeating: "r", count: 124))])
        #expect(longReason.status == 400 && code(longReason) == "INVALID_ARGUMENT")
    }

    @Test("disconnectUser: a held session ends at once with leave (not timeout) and its resume token is void")
    func disconnectHeldSession() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        let alice = try harness.login("alice")
        try bob.ok("join", [("channel", "room")])
        try alice.ok("join", [("channel", "room")])
        _ = alice.events()
        bob.drop()
        #expect(alice.presenceEvents().isEmpty, "held: nothing yet")
        #expect(harness.api("getInfo").body["result"]?["sessions"] == .int(2))

        let answer = harness.api("disconnectUser", ["userId": "bob"])
        #expect(answer.body["result"]?["sessions"] == .int(1))
        #expect(alice.presenceEvents().map { $0["type"]?.stringValue } == ["leave"])
        harness.advance(seconds: 5)
        #expect(alice.presenceEvents().isEmpty, "no timeout later")
        let again = try harness.login("bob", ["resumeToken": .string(bob.resumeToken)])
        #expect(again.lastLoginResult?["resumed"] == .bool(false))
        #expect(harness.api("getUserStatus", ["userIds": ["alice"]]).status == 200)
    }

    @Test("getInfo: version, one node with its sessions (live and held), channels with a member")
    func info() throws {
        let harness = makeHarness()
        let empty = harness.api("getInfo")
        #expect(empty.body == ["ok": true, "result": ["version": .string(BrokerVersion.current),
                                                      "nodes": [["nodeId": "standalone", "sessions": 0]],
                                                      "channels": 0, "sessions": 0]])
        let bob = try harness.login("bob")
        let alice = try harness.login("alice")
        try bob.ok("join", [("channel", "a")])
        try alice.ok("join", [("channel", "b"), ("channelType", "stream")])
        alice.drop()
        let result = harness.api("getInfo").body["result"]
        #expect(result?["sessions"] == .int(2))
        #expect(result?["channels"] == .int(2))
        #expect(result?["nodes"] == [["nodeId": "standalone", "sessions": 2]])
    }

    @Test("random bodies for every op: exactly one answer each, a JSON object, 200 or 400 (404 for unknown ops)")
    func randomBodies() throws {
        let harness = makeHarness()
        let bob = try harness.login("bob")
        try bob.ok("join", [("channel", "room")])
        var generator = SystemRandomNumberGenerator()
        let names: [JSON] = ["room", "bob", "", "é", .string(String(repeating: "x", count: 129)), 1, .null, true, ["a"], ["k": "v"]]
        let keys = ["channel", "channelType", "message", "publisher", "userId", "userIds", "includeUserId", "includeState",
                    "page", "pageSize", "prefix", "reason"]
        let ops = ServerAPIOp.allCases.map(\.rawValue) + ["join", "bogus"]
        for round in 0..<600 {
            let op = ops.randomElement(using: &generator)!
            var body = JSONObject()
            for key in keys where Bool.random(using: &generator) {
                body[key] = names.randomElement(using: &generator)!
            }
            let bytes: [UInt8] = round % 10 == 0
                ? (0..<Int.random(in: 0...12, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                : JSON.object(body).encoded()
            let answer = harness.apiRaw(op, bytes)
            #expect(answer.body["ok"]?.boolValue != nil, "\(op) \(String(decoding: bytes, as: UTF8.self))")
            if ServerAPIOp(rawValue: op) == nil {
                #expect(answer.status == 404)
            } else if answer.status != 200 {
                #expect(answer.status == 400, "\(op): \(answer.body.compactString)")
                let code = answer.body["error"]?["code"]?.stringValue
                #expect(code.flatMap(ErrorCode.init(rawValue:)) != nil)
            }
        }
        // The broker is still consistent: bob is (or was disconnected) as the answers say.
        let info = harness.api("getInfo").body["result"]
        #expect(info?["sessions"]?.numberValue?.intValue ?? -1 <= 1)
    }

    @Test("status codes: UNAUTHORIZED 401, UNKNOWN_OP 404, UNAVAILABLE 503, INTERNAL 500, the rest 400")
    func statusMapping() {
        #expect(ServerAPIAnswer.status(for: .unauthorized) == 401)
        #expect(ServerAPIAnswer.status(for: .unknownOp) == 404)
        #expect(ServerAPIAnswer.status(for: .unavailable) == 503)
        #expect(ServerAPIAnswer.status(for: .internal) == 500)
        for code in ErrorCode.allCases where ![.unauthorized, .unknownOp, .unavailable, .internal].contains(code) {
            #expect(ServerAPIAnswer.status(for: code) == 400)
        }
        let answer = ServerAPIAnswer.failure(BrokerError(.unavailable, "down", retryAfterMs: 250))
        #expect(String(decoding: answer.body, as: UTF8.self)
            == #"{"ok":false,"error":{"code":"UNAVAILABLE","message":"down","retryAfterMs":250}}"#)
    }
}

/// The bearer keys (``ServerAPIKeys``) and the `api` configuration section.
@Suite("Server API keys")
struct ServerAPIKeysTests {
    let key = "0123456789abcdef-key"

    @Test("a configured key is accepted as Bearer (any case); anything else is not")
    func acceptance() {
        var api = Configuration.API()
        api.keys = [key, "another-key-0123456789"]
        let keys = ServerAPIKeys(api, environment: [:])
        #expect(!keys.isEmpty)
        #expect(keys.accepts(authorization: "Bearer \(key)"))
        #expect(keys.accepts(authorization: "bearer \(key)"))
        #expect(keys.accepts(authorization: "Bearer another-key-0123456789"))
        for wrong in [nil, "", "Bearer", "Bearer ", key, "Basic \(key)", "Bearer \(key)x", "Bearer \(key.dropLast())"] {
            #expect(!keys.accepts(authorization: wrong), "\(wrong ?? "nil")")
        }
    }

    @Test("the variable api.keyEnv names adds a key; no key at all turns the API off")
    func environmentAndOff() {
        let fromEnvironment = ServerAPIKeys(Configuration.API(), environment: ["ROLLCALL_API_KEY": key])
        #expect(fromEnvironment.accepts(authorization: "Bearer \(key)"))
        let off = ServerAPIKeys(Configuration.API(), environment: ["ROLLCALL_API_KEY": ""])
        #expect(off.isEmpty)
        #expect(!off.accepts(authorization: "Bearer "))
        var noVariable = Configuration.API()
        noVariable.keyEnv = nil
        #expect(ServerAPIKeys(noVariable, environment: ["ROLLCALL_API_KEY": key]).isEmpty)
    }

    @Test("the loader refuses short keys and keys with spaces, in api.keys and in the environment")
    func validation() throws {
        func load(_ text: String, _ environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration {
            let configuration = try ConfigurationLoader.parse(Array(text.utf8))
            try ConfigurationLoader.validate(configuration, environment: environment)
            return configuration
        }
        #expect(try load(#"{"api": {"keys": ["0123456789abcdef"]}}"#).api.keys == ["0123456789abcdef"])
        let short = #expect(throws: ConfigurationError.self) { try load(#"{"api": {"keys": ["short"]}}"#) }
        #expect(short?.keyPath == "api.keys")
        let spaced = #expect(throws: ConfigurationError.self) { try load(#"{"api": {"keys": ["0123456789 abcdef"]}}"#) }
        #expect(spaced?.keyPath == "api.keys")
        let wrongType = #expect(throws: ConfigurationError.self) { try load(#"{"api": {"keys": "0123456789abcdef"}}"#) }
        #expect(wrongType?.keyPath == "api.keys")
        let typo = #expect(throws: ConfigurationError.self) { try load(#"{"api": {"key": []}}"#) }
        #expect(typo?.suggestion == "api.keys")
        let environment = #expect(throws: ConfigurationError.self) { try load("{}", ["ROLLCALL_API_KEY": "short"]) }
        #expect(environment?.keyPath == "api.keyEnv")
        #expect(try load(#"{"api": {"keyEnv": null}}"#, ["ROLLCALL_API_KEY": "short"]).api.keyEnv == nil)
    }
}
