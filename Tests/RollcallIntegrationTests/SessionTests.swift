import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §2–3 through the real binary: login, ping, reply ids, batching, request errors.
@Suite("Sessions and frames")
struct SessionTests {
    @Test("login then ping returns serverTime")
    func loginAndPing() throws {
        let broker = try BrokerProcess()
        let connection = try broker.connect()
        let before = Int(Date().timeIntervalSince1970 * 1000)
        let login = try connection.login(userId: "alice", platform: "cli")
        #expect(login.ok, "\(login)")
        #expect(login["userId"]?.stringValue == "alice")
        #expect(login["platform"]?.stringValue == "cli")
        #expect(login["sessionId"] != nil)
        #expect(login["resumeToken"]?.stringValue?.isEmpty == false)
        #expect(login["resumed"]?.boolValue == false)
        #expect(login["limits"]?.objectValue != nil)
        let ping = try connection.request("ping")
        #expect(ping.ok)
        let serverTime = try #require(ping["serverTime"]?.numberValue?.intValue)
        #expect(abs(serverTime - before) < 60_000)
    }

    @Test("reply ids are echoed exactly: numbers and strings")
    func idsEchoed() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        for id: JSON in [42, "abc-7", .number(JSONNumber(literal: "12345678901234567890")), "", .number(JSONNumber(literal: "-3.5"))] {
            let reply = try connection.request("ping", id: id)
            #expect(reply.ok)
            #expect(reply.id == id)
        }
    }

    @Test("50 pipelined pings: every reply in order, batched into fewer than 50 frames")
    func batching() throws {
        let broker = try BrokerProcess(config: ["limits": ["requestsPerSecond": 10_000, "requestBurst": 10_000]])
        let connection = try broker.session("alice", recordTranscript: true)
        let framesBefore = connection.counters.framesReceived
        let objectsBefore = connection.transcript.count
        // Pause reading so replies pile up at the broker and must be batched.
        connection.pauseReading()
        var ids: [JSON] = []
        for _ in 0..<50 { ids.append(connection.send("ping")) }
        #expect(eventually { connection.counters.framesSent >= 51 })
        connection.resumeReading()
        let replies = try ids.map { try connection.waitForReply(id: $0, timeout: .seconds(5)) }
        #expect(replies.allSatisfy { $0.ok })
        let received = connection.transcript.dropFirst(objectsBefore).map { Reply($0).id }
        #expect(received == ids, "replies arrive in request order")
        let frames = connection.counters.framesReceived - framesBefore
        #expect(frames < 50, "50 replies came in \(frames) frames")
    }

    @Test("login validates userId, platform and argument types; presenceTimeout is clamped")
    func loginArguments() throws {
        let broker = try BrokerProcess()
        let connection = try broker.connect()
        for bad in ["", String(repeating: "u", count: 129), "tab\there", "nul\u{0}x"] {
            #expect(try connection.login(userId: bad).errorCode == .invalidArgument, "userId \(bad.debugDescription)")
        }
        #expect(try connection.login(userId: "alice", platform: "toaster").errorCode == .invalidArgument)
        #expect(try connection.request("login", ["userId": 42]).errorCode == .invalidRequest)
        #expect(try connection.request("login", ["userId": "alice", "platform": true]).errorCode == .invalidRequest)

        let longest = String(repeating: "é", count: 64) // 128 bytes of UTF-8
        let ok = try connection.login(userId: longest, presenceTimeout: 1)
        #expect(ok.ok, "\(ok)")
        #expect(ok["userId"]?.stringValue == longest)
        #expect(ok["platform"]?.stringValue == "other")
        #expect(ok["presenceTimeout"]?.numberValue?.doubleValue == 5)

        let other = try broker.connect()
        #expect(try other.login(userId: "bob", presenceTimeout: 10_000)["presenceTimeout"]?.numberValue?.doubleValue == 300)
    }

    @Test("after an abrupt drop the session is held and a login with its resumeToken resumes it once")
    func resumeAfterDrop() throws {
        let broker = try BrokerProcess(config: ["presence": ["timeoutSeconds": 30]])
        let first = try broker.connect()
        let login = try first.login(userId: "alice")
        let token = try #require(login["resumeToken"]?.stringValue)
        first.drop()
        #expect(try first.waitForClose(timeout: .seconds(5)).dropped)
        #expect(eventually { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 })

        let second = try broker.connect()
        let resumed = try second.login(userId: "alice", resumeToken: token)
        #expect(resumed.ok)
        #expect(resumed["resumed"]?.boolValue == true)
        #expect(resumed["resumeToken"]?.stringValue != token, "a fresh token is issued")
        #expect(try broker.metric("rollcall_sessions{state=\"held\"}") == 0)

        let third = try broker.connect()
        let reused = try third.login(userId: "alice", resumeToken: token)
        #expect(reused.ok)
        #expect(reused["resumed"]?.boolValue == false, "a used token does not resume")
    }

    @Test("any op before login: NOT_LOGGED_IN, connection stays open")
    func notLoggedIn() throws {
        let broker = try BrokerProcess()
        let connection = try broker.connect()
        let reply = try connection.request("ping", id: 9)
        #expect(reply.errorCode == .notLoggedIn)
        #expect(reply.id == 9)
        #expect(try connection.login(userId: "alice").ok)
    }

    @Test("second login on a session: ALREADY_LOGGED_IN")
    func alreadyLoggedIn() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        let reply = try connection.login(userId: "alice")
        #expect(reply.errorCode == .alreadyLoggedIn)
        #expect(try connection.request("ping").ok)
    }

    @Test("unparsable frame: INVALID_JSON with id null, connection stays open")
    func invalidJSON() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        connection.expectReply(id: .null)
        connection.sendRawText("{\"id\": 5, \"op\": ")
        let reply = try connection.waitForReply(id: .null, timeout: .seconds(5))
        #expect(reply.errorCode == .invalidJSON)
        #expect(reply.id == .null)
        #expect(reply.errorMessage?.isEmpty == false)
        #expect(try connection.request("ping").ok)
    }

    @Test("object without op: INVALID_REQUEST with the id echoed")
    func invalidRequest() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        connection.expectReply(id: "x1")
        connection.sendRawText("{\"id\":\"x1\",\"channel\":\"lobby\"}")
        let reply = try connection.waitForReply(id: "x1", timeout: .seconds(5))
        #expect(reply.errorCode == .invalidRequest)
        connection.expectReply(id: 77)
        connection.sendRawText("{\"id\":77,\"op\":5}")
        #expect(try connection.waitForReply(id: 77, timeout: .seconds(5)).errorCode == .invalidRequest)
        #expect(try connection.request("ping").ok)
    }

    @Test("a JSON value that is not an object: error reply with id null, connection stays open")
    func notAnObject() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        for text in ["[1,2,3]", "\"ping\"", "42", "null"] {
            connection.expectReply(id: .null)
            connection.sendRawText(text)
            let reply = try connection.waitForReply(id: .null, timeout: .seconds(5))
            #expect(!reply.ok)
            #expect(reply.errorCode == .invalidRequest || reply.errorCode == .invalidJSON, "\(text) → \(reply)")
        }
        #expect(try connection.request("ping").ok)
    }

    @Test("requestsPerSecond / requestBurst: RATE_LIMITED with retryAfterMs")
    func requestRate() throws {
        let broker = try BrokerProcess(config: ["limits": ["requestsPerSecond": 1, "requestBurst": 3]])
        let connection = try broker.session("alice")
        let ids = (0..<6).map { _ in connection.send("ping") }
        let replies = try ids.map { try connection.waitForReply(id: $0, timeout: .seconds(5)) }
        let limited = replies.filter { $0.errorCode == .rateLimited }
        #expect(!limited.isEmpty, "\(replies)")
        #expect(replies.prefix(2).allSatisfy { $0.ok }, "the burst is served")
        for reply in limited {
            let retry = try #require(reply.retryAfterMs)
            #expect(retry > 0 && retry <= 1000)
        }
    }

    @Test("unknown op: UNKNOWN_OP with the id echoed")
    func unknownOp() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        let reply = try connection.request("teleport", ["to": "mars"], id: "t")
        #expect(reply.errorCode == .unknownOp)
        #expect(reply.id == "t")
    }

    @Test("logout replies, then the broker closes with 1000")
    func logout() throws {
        let broker = try BrokerProcess()
        let connection = try broker.session("alice")
        let reply = try connection.request("logout")
        #expect(reply.ok)
        let close = try connection.waitForClose(timeout: .seconds(5))
        #expect(close.code == 1000)
        #expect(close.closedByServer)
    }
}
