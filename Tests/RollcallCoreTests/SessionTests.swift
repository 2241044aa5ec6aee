import Testing
import RollcallProtocol
@testable import RollcallCore

@Suite("Sessions")
struct SessionTests {
    @Test("login returns the documented result")
    func loginResult() throws {
        let bench = SessionTestBench()
        let (_, reply) = bench.login("alice", platform: "ios")
        #expect(reply["ok"] == true)
        let result = try #require(reply["result"])
        #expect(result["userId"] == "alice")
        #expect(result["platform"] == "ios")
        #expect(result["resumed"] == false)
        #expect(result["serverTime"] == .int(Int(bench.clock.now)))
        #expect(result["sessionId"]?.stringValue?.isEmpty == false)
        #expect(result["resumeToken"]?.stringValue?.count == 32)
        #expect(result["limits"]?["maxFrameBytes"] == 65536)
    }

    @Test("login limits carry the heartbeat interval and timeout (protocol 1.2 §3, client liveness)")
    func loginHeartbeatLimits() throws {
        let bench = SessionTestBench { $0.heartbeat.intervalSeconds = 4; $0.heartbeat.timeoutSeconds = 12.5 }
        let (_, reply) = bench.login("alice", platform: "web")
        let limits = try #require(reply["result"]?["limits"])
        #expect(limits["heartbeatIntervalSeconds"] == 4)
        #expect(limits["heartbeatTimeoutSeconds"] == .number(JSONNumber(12.5)))
    }

    @Test("platform defaults to other and must be known")
    func platforms() {
        let bench = SessionTestBench()
        let connection = bench.open()
        #expect(bench.request("login", ["userId": "a"], on: connection)["result"]?["platform"] == "other")
        let other = bench.open()
        let bad = bench.request("login", ["userId": "a", "platform": "toaster"], on: other)
        #expect(bad["error"]?["code"] == "INVALID_ARGUMENT")
    }

    @Test("user ids are validated", arguments: ["", String(repeating: "x", count: 129), "a\u{0}b", "tab\there", "c1\u{85}"])
    func invalidUserIds(_ userId: String) {
        let bench = SessionTestBench()
        let connection = bench.open()
        let reply = bench.request("login", ["userId": .string(userId)], on: connection)
        #expect(reply["error"]?["code"] == "INVALID_ARGUMENT")
    }

    @Test("a 128-byte user id is accepted")
    func longestUserId() {
        let bench = SessionTestBench()
        let (_, reply) = bench.login(String(repeating: "é", count: 64))
        #expect(reply["ok"] == true)
    }

    @Test("every op before login gets NOT_LOGGED_IN, unknown ones too")
    func beforeLogin() {
        let bench = SessionTestBench()
        let connection = bench.open()
        #expect(bench.request("ping", on: connection)["error"]?["code"] == "NOT_LOGGED_IN")
        #expect(bench.request("join", ["channel": "x"], on: connection)["error"]?["code"] == "NOT_LOGGED_IN")
        #expect(bench.request("fly", on: connection)["error"]?["code"] == "NOT_LOGGED_IN")
        #expect(bench.closes.isEmpty)
        _ = bench.request("login", ["userId": "a"], on: connection)
        #expect(bench.request("fly", on: connection)["error"]?["code"] == "UNKNOWN_OP")
    }

    @Test("a second login on one connection is ALREADY_LOGGED_IN")
    func secondLogin() {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        #expect(bench.request("login", ["userId": "bob"], on: connection)["error"]?["code"] == "ALREADY_LOGGED_IN")
    }

    @Test("malformed frames get error replies and the connection stays open")
    func malformedFrames() {
        let bench = SessionTestBench()
        let connection = bench.open()
        let invalid = bench.sendRaw("{nope", on: connection).first
        #expect(invalid?["id"] == .null)
        #expect(invalid?["ok"] == false)
        #expect(invalid?["error"]?["code"] == "INVALID_JSON")
        #expect(bench.sendRaw("[1,2]", on: connection).first?["error"]?["code"] == "INVALID_REQUEST")
        let missingOp = bench.sendRaw(#"{"id":"abc"}"#, on: connection).first
        #expect(missingOp?["id"] == "abc")
        #expect(missingOp?["error"]?["code"] == "INVALID_REQUEST")
        let numberOp = bench.sendRaw(#"{"id":5,"op":12}"#, on: connection).first
        #expect(numberOp?["id"] == 5)
        #expect(numberOp?["error"]?["code"] == "INVALID_REQUEST")
        #expect(bench.sendRaw(#"{"id":{"x":1},"op":"ping"}"#, on: connection).first?["id"] == .null)
        #expect(bench.closes.isEmpty)
    }

    @Test("ping answers the server time")
    func ping() {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        bench.clock.advance(byMilliseconds: 1234)
        #expect(bench.request("ping", on: connection)["result"] == ["serverTime": .int(Int(bench.clock.now))])
    }

    @Test("logout replies, then closes with 1000")
    func logout() {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        #expect(bench.request("logout", on: connection)["ok"] == true)
        #expect(bench.closes[connection] == .logout)
        #expect(bench.broker.directory.sessions(of: Name("alice")!).isEmpty)
    }

    @Test("no login within loginTimeoutSeconds closes with 4408")
    func loginTimeout() {
        let bench = SessionTestBench { $0.limits.loginTimeoutSeconds = 2 }
        let late = bench.open()
        let prompt = bench.open()
        _ = bench.request("login", ["userId": "a"], on: prompt)
        #expect(bench.broker.nextDeadline == bench.clock.monotonic + 2000)
        bench.advance(seconds: 1.9)
        #expect(bench.closes.isEmpty)
        bench.advance(seconds: 0.2)
        #expect(bench.closes[late] == .loginTimeout)
        #expect(bench.closes[prompt] == nil)
    }

    @Test("the oldest session is closed with 4409 past maxSessionsPerUser")
    func sessionLimit() {
        let bench = SessionTestBench { $0.limits.maxSessionsPerUser = 2 }
        let (first, _) = bench.login("alice")
        let (second, _) = bench.login("alice")
        #expect(bench.closes.isEmpty)
        let (third, reply) = bench.login("alice")
        #expect(reply["ok"] == true)
        #expect(bench.closes[first] == .sessionLimit)
        #expect(bench.closes[second] == nil && bench.closes[third] == nil)
        #expect(bench.broker.directory.sessions(of: Name("alice")!).count == 2)
        // Another user is unaffected.
        let (_, bob) = bench.login("bob")
        #expect(bob["ok"] == true)
    }

    @Test("an abnormal drop holds the session until its presence timeout")
    func heldSession() {
        let bench = SessionTestBench { $0.presence.timeoutSeconds = 3 }
        let (connection, _) = bench.login("alice")
        bench.end(connection, .abnormal(.dropped))
        let alice = Name("alice")!
        #expect(bench.broker.directory.sessions(of: alice).first?.isHeld == true)
        bench.advance(seconds: 2.9)
        #expect(bench.broker.directory.sessions(of: alice).count == 1)
        bench.advance(seconds: 0.2)
        #expect(bench.broker.directory.sessions(of: alice).isEmpty)
    }

    @Test("presenceTimeout is clamped to 5...300 seconds")
    func presenceTimeoutClamp() {
        let bench = SessionTestBench { $0.presence.timeoutSeconds = 1 }
        let (_, low) = bench.login("a", extra: ["presenceTimeout": 1])
        #expect(low["result"]?["presenceTimeout"] == 5)
        let (_, high) = bench.login("b", extra: ["presenceTimeout": 9999])
        #expect(high["result"]?["presenceTimeout"] == 300)
        let (_, unset) = bench.login("c")
        #expect(unset["result"]?["presenceTimeout"] == 1)
    }

    @Test("a resume token takes over a held session once")
    func resume() throws {
        let bench = SessionTestBench()
        let (connection, first) = bench.login("alice")
        let token = try #require(first["result"]?["resumeToken"]?.stringValue)
        let sessionId = first["result"]?["sessionId"]
        bench.end(connection, .abnormal(.heartbeatTimeout))
        let (_, resumed) = bench.login("alice", extra: ["resumeToken": .string(token)])
        #expect(resumed["result"]?["resumed"] == true)
        #expect(resumed["result"]?["sessionId"] == sessionId)
        #expect(resumed["result"]?["channels"] == [])
        let newToken = resumed["result"]?["resumeToken"]?.stringValue
        #expect(newToken != token)
        // The used token does not resume again.
        let (_, again) = bench.login("alice", extra: ["resumeToken": .string(token)])
        #expect(again["result"]?["resumed"] == false)
    }

    @Test("a token does not resume a live session, another user's session, or an expired one")
    func resumeRefused() throws {
        let bench = SessionTestBench { $0.presence.timeoutSeconds = 2 }
        let (_, live) = bench.login("alice")
        let liveToken = try #require(live["result"]?["resumeToken"])
        #expect(bench.login("alice", extra: ["resumeToken": liveToken]).1["result"]?["resumed"] == false)

        let (dropped, held) = bench.login("bob")
        let heldToken = try #require(held["result"]?["resumeToken"])
        bench.end(dropped, .abnormal(.dropped))
        #expect(bench.login("carol", extra: ["resumeToken": heldToken]).1["result"]?["resumed"] == false)
        bench.advance(seconds: 2.5)
        #expect(bench.login("bob", extra: ["resumeToken": heldToken]).1["result"]?["resumed"] == false)
    }

    @Test("a close frame ends the session at once")
    func closeFrame() {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        bench.end(connection, .closeFrame)
        #expect(bench.broker.directory.sessions(of: Name("alice")!).isEmpty)
    }

    @Test("requests beyond the per-session rate are RATE_LIMITED and the session stays usable")
    func requestRate() throws {
        let bench = SessionTestBench {
            $0.limits.requestsPerSecond = 10
            $0.limits.requestBurst = 5
        }
        let (connection, _) = bench.login("alice")  // the login took one token
        for _ in 0..<4 { #expect(bench.request("ping", on: connection)["ok"] == true) }
        let limited = bench.request("ping", on: connection)
        #expect(limited["error"]?["code"] == "RATE_LIMITED")
        let retry = try #require(limited["error"]?["retryAfterMs"]?.numberValue?.intValue)
        #expect(retry > 0 && retry <= 100)
        bench.clock.advance(byMilliseconds: Int64(retry))
        #expect(bench.request("ping", on: connection)["ok"] == true)
        #expect(bench.closes.isEmpty)
    }

    @Test("undecodable frames spend request tokens too")
    func garbageIsRateLimited() {
        let bench = SessionTestBench {
            $0.limits.requestsPerSecond = 1
            $0.limits.requestBurst = 3
        }
        let connection = bench.open()
        for _ in 0..<3 { #expect(bench.sendRaw("{nope", on: connection).first?["error"]?["code"] == "INVALID_JSON") }
        let limited = bench.sendRaw("{nope", on: connection).first
        #expect(limited?["error"]?["code"] == "RATE_LIMITED")
        #expect(limited?["id"] == .null)
    }

    @Test("replacing the only allowed session never shows the user offline")
    func sessionLimitKeepsUserOnline() {
        let bench = SessionTestBench { $0.limits.maxSessionsPerUser = 1 }
        let (watcher, _) = bench.login("bob")
        _ = bench.login("alice")
        _ = bench.request("subscribeUserStatus", ["userIds": ["alice"]], on: watcher)
        let before = bench.received(on: watcher).count
        let (_, second) = bench.login("alice", platform: "ios")
        #expect(second["ok"] == true)
        let statuses = bench.received(on: watcher).dropFirst(before)
            .filter { $0["event"] == "userStatus" }
            .flatMap { $0["statuses"]?.arrayValue ?? [] }
        #expect(!statuses.isEmpty)
        #expect(statuses.allSatisfy { $0["status"] == "online" })
        #expect(statuses.last?["platforms"] == ["ios"])
    }

    @Test("a resume without presenceTimeout keeps the session's own")
    func resumeKeepsTimeout() throws {
        let bench = SessionTestBench()
        let (connection, first) = bench.login("alice", extra: ["presenceTimeout": 42])
        let token = try #require(first["result"]?["resumeToken"])
        bench.end(connection, .abnormal(.dropped))
        let (_, resumed) = bench.login("alice", extra: ["resumeToken": token])
        #expect(resumed["result"]?["resumed"] == true)
        #expect(resumed["result"]?["presenceTimeout"] == 42)
    }

    @Test("shutdown closes every connection with 1001")
    func shutdown() {
        let bench = SessionTestBench()
        let (a, _) = bench.login("alice")
        let pending = bench.open()
        let (held, _) = bench.login("bob")
        bench.end(held, .abnormal(.dropped))
        bench.shutdown()
        #expect(bench.closes[a] == .shutdown)
        #expect(bench.closes[pending] == .shutdown)
        #expect(bench.closes[held] == nil)
        #expect(bench.broker.directory.all.isEmpty)
    }

    @Test("ended events for unknown or already closed connections are ignored")
    func staleEnds() {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        _ = bench.request("logout", on: connection)
        bench.end(connection, .abnormal(.dropped))
        bench.end(ConnectionID(999), .closeFrame)
        #expect(bench.broker.directory.all.isEmpty)
    }
}
