import Crypto
import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// The server API (PROTOCOL §10, docs/api.md) against the real broker: every op and error
/// status, `disconnectUser` on live and held sessions, publishing as the server, paging
/// `getChannels`, the API over TLS, and `rollcall-cli api`.
@Suite("Server API")
struct ServerAPITests {
    func apiBroker(_ extra: [String: Any] = [:]) throws -> BrokerProcess {
        try BrokerProcess(config: BrokerProcess.merge(ServerAPIRequest.config, extra))
    }

    @Test("publish from the server reaches every member with messages, stream channels too, with the given publisher")
    func publishFromServer() throws {
        let broker = try apiBroker()
        let bob = try broker.session("bob")
        #expect(try bob.request("join", ["channel": "room"]).ok)
        #expect(try bob.request("join", ["channel": "live", "channelType": "stream"]).ok)
        let plain = try ServerAPIRequest.ok(port: broker.port, "publish", ["channel": "room", "message": ["text": "hello"]])
        #expect(plain == ["recipients": 1])
        let event = try bob.waitForEvent(timeout: .seconds(5)) { $0.name == "message" }
        #expect(event.object["publisher"] == "server")
        #expect(event.object["message"] == ["text": "hello"])
        let named = try ServerAPIRequest.ok(
            port: broker.port, "publish", ["channel": "live", "channelType": "stream", "message": 3, "publisher": "ops-bot"])
        #expect(named == ["recipients": 1])
        #expect(try bob.waitForEvent(timeout: .seconds(5)) { $0.name == "message" }.object["publisher"] == "ops-bot")
    }

    @Test("getOnlineUsers (with seq), getState, getUserChannels and getUserStatus answer as over WebSocket")
    func readsMatchWebSocket() throws {
        let broker = try apiBroker()
        let bob = try broker.session("bob")
        let alice = try broker.session("alice")
        #expect(try bob.request("join", ["channel": "room", "state": ["mood": "ok"]]).ok)
        #expect(try alice.request("join", ["channel": "room"]).ok)
        let reads: [(String, JSON)] = [
            ("getOnlineUsers", ["channel": "room", "includeState": true]),
            ("getOnlineUsers", ["channel": "nobody"]),
            ("getState", ["channel": "room", "userId": "bob"]),
            ("getUserChannels", ["userId": "bob"]),
            ("getUserStatus", ["userIds": ["bob", "carol"]]),
        ]
        for (op, body) in reads {
            let overWebSocket = try alice.request(op, body)
            #expect(overWebSocket.ok)
            var fromAPI = try ServerAPIRequest.ok(port: broker.port, op, body)
            if op == "getUserStatus" {
                // lastUpdateTime and the like are the same records; compare the statuses.
                fromAPI = .array(fromAPI["statuses"]?.arrayValue?.map { $0["status"] ?? .null } ?? [])
                #expect(fromAPI == .array(overWebSocket.result["statuses"]?.arrayValue?.map { $0["status"] ?? .null } ?? []))
            } else {
                #expect(fromAPI == overWebSocket.result, "\(op)")
            }
        }
        let users = try ServerAPIRequest.ok(port: broker.port, "getOnlineUsers", ["channel": "room"])
        #expect(users["seq"] == 2)
    }

    @Test("getChannels pages through many channels with a prefix: message before stream, byte order, each once")
    func getChannelsPaging() throws {
        let broker = try apiBroker()
        let bob = try broker.session("bob")
        let alice = try broker.session("alice")
        var expected: [String] = []
        for index in 0..<150 {
            let name = "p:\(String(format: "%03d", (index * 37) % 150))"
            #expect(try bob.request("join", ["channel": .string(name)]).ok)
        }
        expected = (0..<150).map { "p:\(String(format: "%03d", $0))" }
        for name in ["q:1", "p", "o:9"] { #expect(try alice.request("join", ["channel": .string(name)]).ok) }
        #expect(try alice.request("join", ["channel": "p:stream", "channelType": "stream"]).ok)
        var seen: [String] = []
        var page: JSON = .null
        var pages = 0
        repeat {
            var body: JSONObject = ["prefix": "p:", "pageSize": 7]
            if case .string = page { body["page"] = page }
            let result = try ServerAPIRequest.ok(port: broker.port, "getChannels", .object(body))
            for channel in result["channels"]?.arrayValue ?? [] {
                let type = channel["channelType"]?.stringValue ?? "?"
                seen.append(type == "message" ? channel["channel"]?.stringValue ?? "?" : "stream " + (channel["channel"]?.stringValue ?? "?"))
            }
            page = result["nextPage"] ?? .null
            pages += 1
        } while page != .null && pages < 100
        #expect(seen == expected + ["stream p:stream"])
        #expect(pages == 22)
        let all = try ServerAPIRequest.ok(port: broker.port, "getChannels", ["pageSize": 1000])
        #expect(all["channels"]?.arrayValue?.count == 154)
        #expect(all["nextPage"] == .null)
    }

    @Test("disconnectUser on a live session: close 4403 with the reason, others see leave, status loggedOut")
    func disconnectLiveSession() throws {
        let broker = try apiBroker()
        let bob = try broker.session("bob")
        let alice = try broker.session("alice")
        #expect(try bob.request("join", ["channel": "room"]).ok)
        #expect(try alice.request("join", ["channel": "room"]).ok)
        _ = try alice.waitForEvent(timeout: .seconds(5)) { $0.type == "snapshot" }
        let result = try ServerAPIRequest.ok(port: broker.port, "disconnectUser", ["userId": "bob", "reason": "account suspended"])
        #expect(result == ["sessions": 1])
        let close = try bob.waitForClose(timeout: .seconds(5))
        #expect(close.code == 4403)
        #expect(close.reason == "account suspended")
        #expect(close.closedByServer)
        let leave = try alice.waitForEvent(timeout: .seconds(5)) { $0.name == "presence" && ($0.type == "leave" || $0.type == "timeout") }
        #expect(leave.type == "leave")
        #expect(leave.object["publisher"] == "bob")
        let status = try ServerAPIRequest.ok(port: broker.port, "getUserStatus", ["userIds": ["bob"]])
        #expect(status["statuses"]?.arrayValue?.first?["status"] == "loggedOut")
    }

    @Test("disconnectUser on a held session: leave at once (not timeout), and its resume token no longer resumes")
    func disconnectHeldSession() throws {
        let broker = try apiBroker(["presence": ["timeoutSeconds": 60]])
        let bob = try broker.connect()
        let token = try #require(try bob.login(userId: "bob", platform: "cli").result["resumeToken"]?.stringValue)
        let alice = try broker.session("alice")
        #expect(try bob.request("join", ["channel": "room"]).ok)
        #expect(try alice.request("join", ["channel": "room"]).ok)
        _ = try alice.waitForEvent(timeout: .seconds(5)) { $0.type == "snapshot" }
        bob.drop()
        #expect(eventually { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 }, "bob is held")
        let info = try ServerAPIRequest.ok(port: broker.port, "getInfo")
        #expect(info["sessions"] == 2)

        #expect(try ServerAPIRequest.ok(port: broker.port, "disconnectUser", ["userId": "bob"]) == ["sessions": 1])
        let gone = try alice.waitForEvent(timeout: .seconds(5)) { $0.name == "presence" && ($0.type == "leave" || $0.type == "timeout") }
        #expect(gone.type == "leave", "ended as by logout, not by the hold's timeout")
        #expect(try broker.metric("rollcall_sessions{state=\"held\"}") == 0)
        let again = try broker.connect()
        let login = try again.login(userId: "bob", platform: "cli", resumeToken: token)
        #expect(login.ok)
        #expect(login.result["resumed"] == false)
        let status = try ServerAPIRequest.ok(port: broker.port, "getUserStatus", ["userIds": ["bob"]])
        #expect(status["statuses"]?.arrayValue?.first?["status"] == "online", "the new login is online again")
    }

    @Test("the API acts as the server: no token globs (jwt mode) and no rate limits")
    func noGlobsNoRateLimits() throws {
        let secret = "server-api-jwt-secret"
        let broker = try apiBroker(["auth": ["mode": "jwt", "secret": secret],
                                    "limits": ["requestsPerSecond": 5, "requestBurst": 5]])
        func token(_ user: String, channels: [String]) -> String {
            func base64URL(_ bytes: [UInt8]) -> String {
                Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            let claims: JSON = ["sub": .string(user), "exp": .int(Int(Date().timeIntervalSince1970) + 600),
                                "channels": .array(channels.map { .string($0) })]
            let signed = base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + base64URL(claims.encoded())
            let mac = HMAC<SHA256>.authenticationCode(for: Array(signed.utf8), using: SymmetricKey(data: Array(secret.utf8)))
            return signed + "." + base64URL(Array(mac))
        }
        let bob = try broker.connect()
        #expect(try bob.login(userId: "bob", platform: "cli", token: token("bob", channels: ["a:*"])).ok)
        #expect(try bob.request("join", ["channel": "a:1"]).ok)
        let carol = try broker.connect()
        #expect(try carol.login(userId: "carol", platform: "cli", token: token("carol", channels: ["b:*"])).ok)
        #expect(try carol.request("join", ["channel": "b:1"]).ok)
        // Bob's token does not cover b:1; the API reads and publishes it all the same.
        let refused = try bob.request("publish", ["channel": "b:1", "message": "x"])
        #expect(refused.errorCodeText == "FORBIDDEN", "\(refused)")
        #expect(try ServerAPIRequest.ok(port: broker.port, "getOnlineUsers", ["channel": "b:1"])["users"] == [["userId": "carol"]])
        #expect(try ServerAPIRequest.ok(port: broker.port, "getUserChannels", ["userId": "carol"])["totalChannel"] == 1)
        #expect(try ServerAPIRequest.ok(port: broker.port, "publish", ["channel": "b:1", "message": "x"]) == ["recipients": 1])
        // Far more calls than a session's requestsPerSecond/requestBurst: none is refused.
        for index in 0..<30 {
            let (status, answer) = try ServerAPIRequest.call(port: broker.port, "publish", ["channel": "a:1", "message": .int(index)])
            #expect(status == 200, "call \(index): \(status) \(answer)")
        }
    }

    @Test("getInfo: version, one standalone node, totals of live and held sessions and live channels")
    func getInfo() throws {
        let broker = try apiBroker()
        #expect(try ServerAPIRequest.ok(port: broker.port, "getInfo") == [
            "version": "1.2.0", "nodes": [["nodeId": "standalone", "sessions": 0]], "channels": 0, "sessions": 0,
        ])
        let bob = try broker.session("bob")
        #expect(try bob.request("join", ["channel": "a"]).ok)
        let info = try ServerAPIRequest.ok(port: broker.port, "getInfo")
        #expect(info["sessions"] == 1 && info["channels"] == 1)
    }

    @Test("every error status: 400, 401, 404, 405, 413; the API off answers 401")
    func errorStatuses() throws {
        let broker = try apiBroker()
        let port = broker.port
        func expectError(_ outcome: (status: Int, answer: JSON), _ status: Int, _ code: String,
                         sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(outcome.status == status, sourceLocation: sourceLocation)
            #expect(outcome.answer["ok"] == false, sourceLocation: sourceLocation)
            #expect(outcome.answer["error"]?["code"]?.stringValue == code, "\(outcome.answer.compactString)", sourceLocation: sourceLocation)
        }
        expectError(try ServerAPIRequest.send(port: port, path: "/api/v1/getInfo", body: Array("{".utf8)), 400, "INVALID_JSON")
        expectError(try ServerAPIRequest.send(port: port, path: "/api/v1/getInfo", body: Array("[]".utf8)), 400, "INVALID_REQUEST")
        expectError(try ServerAPIRequest.call(port: port, "getState", ["channel": "room", "userId": ""]), 400, "INVALID_ARGUMENT")
        expectError(try ServerAPIRequest.call(port: port, "getState", ["channel": "room", "userId": "zed"]), 400, "USER_NOT_PRESENT")
        expectError(try ServerAPIRequest.call(port: port, "getInfo", key: nil), 401, "UNAUTHORIZED")
        expectError(try ServerAPIRequest.call(port: port, "getInfo", key: "wrong-key-0123456789"), 401, "UNAUTHORIZED")
        expectError(try ServerAPIRequest.call(port: port, "join", ["channel": "room"]), 404, "UNKNOWN_OP")
        expectError(try ServerAPIRequest.send(port: port, method: "GET", path: "/api/v1/getInfo", body: []), 405, "INVALID_REQUEST")
        let tooLarge = [UInt8](repeating: UInt8(ascii: " "), count: 65537)
        expectError(try ServerAPIRequest.send(port: port, path: "/api/v1/publish", body: tooLarge), 413, "MESSAGE_TOO_LARGE")
        #expect(try ServerAPIRequest.ok(port: port, "getInfo")["sessions"] == 0, "the broker answers on")

        let off = try BrokerProcess()
        expectError(try ServerAPIRequest.call(port: off.port, "getInfo"), 401, "UNAUTHORIZED")
    }

    @Test("the server API over TLS: https on the broker's port")
    func overTLS() throws {
        let files = try TLSTests.files.get()
        let curl = try #require(ExternalCommand.which("curl"), "the curl command is needed (make deps installs it)")
        let broker = try apiBroker(["tls": ["certFile": files.cert, "keyFile": files.key]])
        let bob = try RollcallConnection.connect(url: "wss://127.0.0.1:\(broker.port)/v1", allowSelfSignedCertificate: true)
        #expect(try bob.login(userId: "bob", platform: "cli").ok)
        #expect(try bob.request("join", ["channel": "secure"]).ok)
        func post(_ op: String, _ body: String, key: String) throws -> (status: String, answer: JSON) {
            let result = try ExternalCommand.run(curl, [
                "-sk", "--max-time", "10", "-X", "POST", "-H", "Authorization: Bearer \(key)", "-H", "Content-Type: application/json",
                "-d", body, "-w", "\n%{http_code}", "https://127.0.0.1:\(broker.port)/api/v1/\(op)",
            ])
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (String(lines.last ?? ""), try JSONParser.parse(Array(lines.dropLast().joined(separator: "\n").utf8)))
        }
        let online = try post("getOnlineUsers", #"{"channel":"secure"}"#, key: ServerAPIRequest.key)
        #expect(online.status == "200")
        #expect(online.answer["result"]?["totalOccupancy"] == 1)
        let published = try post("publish", #"{"channel":"secure","message":"over https"}"#, key: ServerAPIRequest.key)
        #expect(published.answer["result"]?["recipients"] == 1)
        #expect(try bob.waitForEvent(timeout: .seconds(5)) { $0.name == "message" }.object["message"] == "over https")
        let refused = try post("getInfo", "{}", key: "wrong-key-0123456789")
        #expect(refused.status == "401")
    }

    @Test("rollcall-cli api: prints the result, exits 1 on an error answer, non-zero without a key")
    func cliAPI() throws {
        let broker = try apiBroker()
        let bob = try broker.session("bob")
        #expect(try bob.request("join", ["channel": "room"]).ok)
        let url = "ws://127.0.0.1:\(broker.port)/v1"
        let info = try ExternalCommand.run(CLITests.cliBinary, ["--url", url, "api", "getInfo", "--api-key", ServerAPIRequest.key])
        #expect(info.status == 0, "\(info.stderr)")
        let result = try JSONParser.parse(Array(info.stdout.utf8))
        #expect(result["sessions"] == 1 && result["channels"] == 1)
        let users = try ExternalCommand.run(CLITests.cliBinary, [
            "api", "getOnlineUsers", #"{"channel":"room"}"#, "--api-key", ServerAPIRequest.key, "--url", url,
        ])
        #expect(try JSONParser.parse(Array(users.stdout.utf8))["totalOccupancy"] == 1)
        let failed = try ExternalCommand.run(CLITests.cliBinary, [
            "--url", url, "api", "getState", #"{"channel":"room","userId":"zed"}"#, "--api-key", ServerAPIRequest.key,
        ])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("USER_NOT_PRESENT"))
        let wrongKey = try ExternalCommand.run(CLITests.cliBinary, ["--url", url, "api", "getInfo", "--api-key", "nope-0123456789abcdef"])
        #expect(wrongKey.status == 1)
        #expect(wrongKey.stderr.contains("401"))
        let noKey = try ExternalCommand.run(CLITests.cliBinary, ["--url", url, "api", "getInfo"])
        #expect(noKey.status != 0)
        let fromEnvironment = try ExternalCommand.run(
            "/usr/bin/env", ["ROLLCALL_API_KEY=\(ServerAPIRequest.key)", CLITests.cliBinary, "--url", url, "api", "getInfo"])
        #expect(fromEnvironment.status == 0, "the key from ROLLCALL_API_KEY: \(fromEnvironment.stderr)")
        #expect(fromEnvironment.stdout.contains("\"version\""), "\(fromEnvironment.stdout)")
    }
}
