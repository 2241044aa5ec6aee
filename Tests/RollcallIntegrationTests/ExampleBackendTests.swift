import Crypto
import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// `examples/backend/backend.py` (Python, standard library) receiving real webhooks from the
/// broker: it rejects bad and stale signatures, keeps the roster of a churning channel equal
/// to the broker's, and kicks a user through the server API (`disconnectUser`): the user's
/// session closes with 4403 and the backend's reason. With a wrong key the broker's 401 is
/// logged and nobody is kicked.
@Suite struct ExampleBackendTests {
    static let secret = "example-backend-secret"
    /// The server API key the backend is given (the broker's `api.keys`).
    static let apiKey = "example-backend-api-key"

    /// The backend on a free port; stdout and stderr collected.
    final class Backend {
        let process: ChildProcess
        var output: OutputCollector { process.output }
        let port: Int

        init(brokerURL: String, port: Int = 0, apiKey: String = ExampleBackendTests.apiKey) throws {
            process = try ChildProcess(
                executable: "/usr/bin/env",
                arguments: ["ROLLCALL_WEBHOOK_SECRET=\(ExampleBackendTests.secret)", "BACKEND_PORT=\(port)",
                            "ROLLCALL_URL=\(brokerURL)", "ROLLCALL_API_KEY=\(apiKey)", "BANNED_WORDS=spam",
                            "python3", "examples/backend/backend.py"],
                directory: BrokerProcess.packageRoot.path)
            guard let port = process.output.waitForListeningPort(prefix: "backend listening on ", timeout: 15) else {
                process.send(SIGKILL)
                throw HarnessError("the example backend did not start: \(process.output.stderrText)")
            }
            self.port = port
        }

        /// The roster it holds for message channel `channel` (nil: none).
        func roster(_ channel: String) throws -> [String: [String: String]]? {
            let response = try RawHTTP.get(port: port, path: "/rosters")
            let listing = try JSONParser.parse(response.body).arrayValue ?? []
            guard let entry = listing.first(where: { $0["channel"]?.stringValue == channel }) else { return nil }
            var members: [String: [String: String]] = [:]
            for member in entry["members"]?.objectValue?.members ?? [] { members[member.key] = stringMap(member.value) ?? [:] }
            return members
        }

        /// POSTs `body` with `signature` to the backend; returns the status.
        func post(_ body: [UInt8], signature: String) throws -> Int {
            let socket = try RawSocket(port: port)
            try socket.send("POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            + "Content-Length: \(body.count)\r\nRollcall-Signature: \(signature)\r\nConnection: close\r\n\r\n")
            try socket.send(body)
            return try RawHTTP.readResponse(socket, timeout: 5).status
        }

        deinit {
            process.send(SIGKILL)
            _ = process.waitForExit(timeout: 5)
        }
    }

    private func sign(_ body: [UInt8], at sentAt: Int64, secret: String = ExampleBackendTests.secret) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Array(secret.utf8)))
        hmac.update(data: Array("\(sentAt).".utf8) + body)
        return "t=\(sentAt),v1=" + hmac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    @Test func itRefusesBadAndStaleSignatures() throws {
        let backend = try Backend(brokerURL: "http://127.0.0.1:1")
        let body = Array(#"{"id":"b","sentAt":1,"node":"standalone","events":[]}"#.utf8)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(try backend.post(body, signature: sign(body, at: now)) == 204)
        #expect(try backend.post(body, signature: sign(body, at: now, secret: "wrong")) == 401)
        #expect(try backend.post(body, signature: sign(body, at: now - 3_600_000)) == 401)
        #expect(try backend.post(body, signature: "t=\(now)") == 401)
        #expect(try backend.post(body + [0x20], signature: sign(body, at: now)) == 401)
        // webhooks.secrets (1.2): the header carries one v1 per broker secret; any of them will do.
        let other = sign(body, at: now, secret: "rotated-out").split(separator: ",")[1]
        let right = sign(body, at: now).split(separator: ",")[1]
        #expect(try backend.post(body, signature: "t=\(now),\(other),\(right)") == 204)
        #expect(try backend.post(body, signature: "t=\(now),\(right),\(other)") == 204)
        #expect(try backend.post(body, signature: "t=\(now),\(other),\(other)") == 401)
    }

    @Test func itKeepsTheBrokersRosterAndCallsTheAPIToKick() throws {
        // Each needs the other's address: the broker starts first, posting to a port the
        // backend takes a moment later (its first batches are retried until it listens).
        let backendPort = try WebhookReceiver.freePort()
        let broker = try BrokerProcess(config: [
            "webhooks": ["url": "http://127.0.0.1:\(backendPort)/webhooks", "secret": Self.secret,
                         "batchMaxDelaySeconds": 0.05, "batchMaxEvents": 5],
            "presence": ["maxInstantEvents": 4, "hysteresis": 1, "intervalSeconds": 0.2, "timeoutSeconds": 0.5],
            "api": ["keys": [Self.apiKey]],
        ])
        var generator = SeededGenerator(seed: 13)
        var connections: [String: RollcallConnection] = [:]
        let users = (0..<7).map { "user-\($0)" }
        func churn(_ steps: Int) throws {
            for _ in 0..<steps {
                let user = users.randomElement(using: &generator)!
                if let connection = connections[user] {
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: _ = try connection.channelOp("leave", "room"); connection.close(); connections[user] = nil
                    case 1: connection.drop(); connections[user] = nil
                    default: _ = try connection.channelOp("setState", "room", ["state": ["n": .string("\(Int.random(in: 0..<9, using: &generator))")]])
                    }
                } else {
                    let connection = try broker.session(user)
                    guard try connection.join("room", state: ["n": "0"]).ok else { throw HarnessError("join failed") }
                    connections[user] = connection
                }
            }
        }
        try churn(30)
        let backend = try Backend(brokerURL: "http://127.0.0.1:\(broker.port)", port: backendPort)
        try churn(50)
        let observer = try broker.session("observer")
        var held: [String: [String: String]]? = nil
        var expected: [String: [String: String]] = [:]
        let matched = try eventually(timeout: 30) {
            expected = try observer.onlineUsers("room")
            held = try backend.roster("room")
            return (held ?? [:]) == expected
        }
        #expect(matched, "backend \(String(describing: held)) != broker \(expected)")

        // A banned word in a custom status: the backend kicks the user through the server API
        // (disconnectUser, PROTOCOL §10); the session closes with 4403 and the backend's reason.
        let spammer = try broker.session("spammer")
        #expect(try spammer.request("setCustomStatus", ["customStatus": "buy spam now"]).ok)
        let close = try spammer.waitForClose(timeout: .seconds(15))
        #expect(close.code == 4403)
        #expect(close.reason == "banned word in status")
        #expect(backend.output.waitForStdoutLine(prefix: "backend: kicked spammer (1 sessions)", timeout: 5) != nil,
                "\(backend.output.stdoutText) \(backend.output.stderrText)")
        #expect(try broker.session("observer-2").request("getUserStatus", ["userIds": ["spammer"]])
            .result["statuses"]?.arrayValue?.first?["status"] == "loggedOut")
    }

    @Test func aKickWithAWrongKeyIsRefusedAndLogged() throws {
        let backendPort = try WebhookReceiver.freePort()
        let broker = try BrokerProcess(config: [
            "webhooks": ["url": "http://127.0.0.1:\(backendPort)/webhooks", "secret": Self.secret,
                         "events": ["userStatus"], "batchMaxDelaySeconds": 0.05],
            "api": ["keys": [Self.apiKey]],
        ])
        let backend = try Backend(brokerURL: "http://127.0.0.1:\(broker.port)", port: backendPort, apiKey: "not-the-api-key-0123")
        let spammer = try broker.session("spammer")
        #expect(try spammer.request("setCustomStatus", ["customStatus": "spam"]).ok)
        #expect(backend.output.waitForStderr(containing: "cannot kick spammer: HTTP Error 401", timeout: 15))
        #expect(try spammer.request("ping").ok, "still connected")
    }
}
