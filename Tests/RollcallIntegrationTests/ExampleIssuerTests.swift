import Foundation
import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// `examples/issuer/issuer.py` and `issuer.mjs` (docs/authentication.md): the tokens they mint —
/// on the command line and from their demo `GET /token` — log in to a jwt-mode broker, and
/// their `users`, `channels` and `info` claims take effect. HS256 with the standard library;
/// RS256, ES256 and EdDSA with keys they make (`--new-key`), a `kid` in the header, and the
/// JWK Set they print (`--jwks`, the broker's `auth.jwksFile`) or serve (`auth.jwksUrl`).
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

    /// A temporary folder with a new private key per algorithm, made by `script` (`--new-key`).
    final class Keys {
        let directory: URL
        init(interpreter: String, script: String, algorithms: [String]) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-issuer-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for algorithm in algorithms {
                let made = try ExternalCommand.run("/usr/bin/env", [interpreter, script, "--new-key", algorithm])
                guard made.status == 0, made.stdout.hasPrefix("-----BEGIN PRIVATE KEY-----") else {
                    throw HarnessError("--new-key \(algorithm): \(made.stderr)")
                }
                try Data(made.stdout.utf8).write(to: directory.appendingPathComponent("\(algorithm).pem"))
            }
        }
        func path(_ algorithm: String) -> String { directory.appendingPathComponent("\(algorithm).pem").path }
        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    /// The header of a compact JWS, decoded.
    private func header(_ token: String) throws -> JSON {
        var text = String(token.prefix { $0 != "." }).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return try JSONParser.parse(Array(try #require(Data(base64Encoded: text))))
    }

    @Test("RS256, ES256 and EdDSA: new keys, their JWK Set as auth.jwksFile, a token of each with its kid logs in",
          arguments: issuers.map(\.1))
    func asymmetricCommandLine(script: String) throws {
        let interpreter = try #require(Self.issuers.first { $0.1 == script }?.0)
        let keys = try Keys(interpreter: interpreter, script: script, algorithms: ["RS256", "ES256", "EdDSA"])
        let printed = try ExternalCommand.run("/usr/bin/env", [interpreter, script, "--jwks", "--key", keys.path("EdDSA"),
                                                               "--publish", keys.path("RS256"), "--publish", keys.path("ES256")])
        #expect(printed.status == 0, "\(printed.stderr)")
        let set = try JSONParser.parse(Array(printed.stdout.utf8))
        let published = try #require(set["keys"]?.arrayValue)
        #expect(published.map { $0["alg"]?.stringValue } == ["EdDSA", "RS256", "ES256"])
        #expect(published.allSatisfy { $0["d"] == nil && $0["use"] == "sig" }, "public halves only")
        let file = keys.directory.appendingPathComponent("jwks.json")
        try Data(printed.stdout.utf8).write(to: file)
        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "secretEnv": NSNull(), "jwksFile": file.path]])
        for (index, algorithm) in ["EdDSA", "RS256", "ES256"].enumerated() {
            let minted = try ExternalCommand.run("/usr/bin/env", [interpreter, script, "alice", "--key", keys.path(algorithm), "--ttl", "600",
                                                                  "--info", #"{"name":"Alice"}"#])
            #expect(minted.status == 0, "\(minted.stderr)")
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let head = try header(token)
            #expect(head["alg"]?.stringValue == algorithm)
            #expect(head["kid"] == published[index]["kid"], "the kid names the key of the set")
            let alice = try broker.connect()
            let login = try alice.login(userId: "alice", token: token)
            #expect(login.ok, "\(algorithm): \(login)")
        }
        #expect(try broker.metric(#"rollcall_jwks_keys{source="file"}"#) == 3)
    }

    @Test("the demo server with --key signs with it and serves its JWK Set, which the broker fetches as auth.jwksUrl",
          arguments: issuers.map(\.1))
    func asymmetricServer(script: String) throws {
        let interpreter = try #require(Self.issuers.first { $0.1 == script }?.0)
        let keys = try Keys(interpreter: interpreter, script: script, algorithms: ["EdDSA", "RS256"])
        let process = try ChildProcess(executable: "/usr/bin/env",
                                       arguments: [interpreter, script, "--serve", "0", "--ttl", "120", "--key", keys.path("EdDSA"),
                                                   "--publish", keys.path("RS256")],
                                       directory: BrokerProcess.packageRoot.path)
        defer {
            process.send(SIGKILL)
            _ = process.waitForExit(timeout: 5)
        }
        let port = try #require(process.output.waitForListeningPort(prefix: "issuer listening on ", timeout: 15), "\(process.output.stderrText)")
        let served = try RawHTTP.get(port: port, path: "/.well-known/jwks.json")
        #expect(served.status == 200)
        #expect(try JSONParser.parse(served.body)["keys"]?.arrayValue?.count == 2)

        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "secretEnv": NSNull(),
                                                         "jwksUrl": "http://127.0.0.1:\(port)/.well-known/jwks.json"]])
        let body = try JSONParser.parse(try RawHTTP.get(port: port, path: "/token?user=bob").body)
        let token = try #require(body["token"]?.stringValue)
        #expect(try header(token)["alg"] == "EdDSA")
        let bob = try broker.connect()
        let login = try bob.login(userId: "bob", token: token)
        #expect(login.ok, "\(login)")
        #expect(login["expiresAt"] == body["expiresAt"])
        #expect(try bob.join("lobby").ok)
        #expect(try bob.channelOp("getOnlineUsers", "lobby")["users"] == [["userId": "bob", "info": ["name": "Bob"]]])
        // The published (not signing) key of a rotation logs in too.
        let minted = try ExternalCommand.run("/usr/bin/env", [interpreter, script, "carol", "--key", keys.path("RS256")])
        let carol = try broker.connect()
        #expect(try carol.login(userId: "carol", token: minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).ok)
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
        let port = try #require(output.waitForListeningPort(prefix: "issuer listening on ", timeout: 15), "\(output.stderrText)")
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
