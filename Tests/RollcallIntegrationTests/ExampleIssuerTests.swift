import Foundation
import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// `examples/issuer/issuer.py` and `issuer.mjs` (standard library only, docs/authentication.md):
/// the tokens they mint — on the command line and from their demo `GET /token` — log in to a
/// jwt-mode broker, and their `users`, `channels` and `info` claims take effect.
@Suite("Example token issuers", .serialized)
struct ExampleIssuerTests {
    static let secret = "example-issuer-secret-0123456789abcdef"

    /// The interpreter and script of each issuer.
    static let issuers: [(String, String)] = [("python3", "examples/issuer/issuer.py"), ("node", "examples/issuer/issuer.mjs")]

    private func jwtBroker() throws -> BrokerProcess {
        try BrokerProcess(config: ["auth": ["mode": "jwt", "secret": Self.secret]])
    }

    @Test("a command-line token logs in; its users, channels and info claims apply", arguments: issuers.map(\.1))
    func commandLine(script: String) throws {
        let interpreter = try #require(Self.issuers.first { $0.1 == script }?.0)
        let minted = try ExternalCommand.run("/usr/bin/env", [
            "ROLLCALL_JWT_SECRET=\(Self.secret)", interpreter, script, "alice", "--ttl", "600",
            "--channels", "room:*", "--users", "b*", "--info", #"{"name":"Alice","role":"host"}"#,
        ])
        #expect(minted.status == 0, "\(minted.stderr)")
        let broker = try jwtBroker()
        let alice = try broker.connect()
        let login = try alice.login(userId: "alice", token: minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(login.ok, "\(login)")
        #expect(try alice.join("room:1").ok)
        #expect(try alice.join("lobby").errorCodeText == "FORBIDDEN")
        let page = try alice.channelOp("getOnlineUsers", "room:1")
        #expect(page["users"] == [["userId": "alice", "info": ["name": "Alice", "role": "host"]]])
        #expect(try alice.request("getUserStatus", ["userIds": ["bob", "carol"]]).failures == ["carol": "FORBIDDEN"])

        let refused = try ExternalCommand.run("/usr/bin/env", ["ROLLCALL_JWT_SECRET=", interpreter, script, "alice"])
        #expect(refused.status != 0)
        #expect(refused.stdout.isEmpty)
    }

    @Test("the demo server answers GET /token?user= with a token the broker accepts, and its expiresAt", arguments: issuers.map(\.1))
    func demoServer(script: String) throws {
        let interpreter = try #require(Self.issuers.first { $0.1 == script }?.0)
        let process = try ChildProcess(executable: "/usr/bin/env",
                                       arguments: ["ROLLCALL_JWT_SECRET=\(Self.secret)", interpreter, script, "--serve", "0", "--ttl", "120"],
                                       directory: BrokerProcess.packageRoot.path)
        defer {
            process.send(SIGKILL)
            _ = process.waitForExit(timeout: 5)
        }
        let output = process.output
        let line = try #require(output.waitForStdoutLine(prefix: "issuer listening on ", timeout: 15), "\(output.stderrText)")
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0) })
        let response = try RawHTTP.get(port: port, path: "/token?user=bob")
        #expect(response.status == 200)
        let body = try JSONParser.parse(response.body)
        let token = try #require(body["token"]?.stringValue)
        #expect(try RawHTTP.get(port: port, path: "/token").status == 400)

        let broker = try jwtBroker()
        let bob = try broker.connect()
        let login = try bob.login(userId: "bob", token: token)
        #expect(login.ok, "\(login)")
        #expect(login["expiresAt"] == body["expiresAt"])
        #expect(try bob.join("lobby").ok)
        #expect(try bob.channelOp("getOnlineUsers", "lobby")["users"] == [["userId": "bob", "info": ["name": "Bob"]]])
    }
}
