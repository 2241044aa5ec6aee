import Foundation
import RollcallClient
import RollcallCore
import RollcallProtocol
import RollcallTestSupport
import Testing

/// JWK Sets against the real broker (PROTOCOL §3, 1.2): `auth.jwksFile` re-read within 5 s of
/// a change (a rotation with no session lost, a file that no longer parses keeps the keys),
/// `auth.jwksUrl` from a small HTTP server in the test process (refreshed every second here;
/// a failed fetch keeps the keys and is counted), and the start-up refusals naming the key.
@Suite("Key sets: jwksFile and jwksUrl on the real broker", .serialized)
struct KeySetIntegrationTests {
    static let old = TestSigningKey.rsa(kid: "2026-01")
    static let new = TestSigningKey.ed25519(kid: "2026-02")
    static let ec = TestSigningKey.p256(kid: "ec-1")

    /// A temporary folder for a key set file.
    final class KeyFile {
        let directory: URL
        var path: String { directory.appendingPathComponent("jwks.json").path }

        init(_ keys: [TestSigningKey]) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-jwks-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try write(TestSigningKey.jwks(keys))
        }

        /// Replaces the file as a deploy does: a new file renamed over it.
        func write(_ text: String) throws {
            let staged = directory.appendingPathComponent("jwks.json.new")
            try Data(text.utf8).write(to: staged)
            guard rename(staged.path, path) == 0 else { throw HarnessError("rename failed: errno \(errno)") }
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    /// What the key set server answers now; the test changes it while the broker fetches.
    final class ServedAnswer: @unchecked Sendable {
        private let lock = NSLock()
        private var answer: WebhookReceiver.Answer
        init(_ answer: WebhookReceiver.Answer) { self.answer = answer }
        var current: WebhookReceiver.Answer {
            get { lock.withLock { answer } }
            set { lock.withLock { answer = newValue } }
        }
    }

    /// Logs `user` in with a token of `key`; the reply.
    private func login(_ broker: BrokerProcess, _ user: String, _ key: TestSigningKey) throws -> (RollcallConnection, Reply) {
        let connection = try broker.connect()
        return (connection, try connection.login(userId: user, token: key.token(sub: user, ttl: 600)))
    }

    /// Logs `user` in with `key`'s token and expects the refusal: UNAUTHORIZED, then close 4401.
    private func expectRefused(_ broker: BrokerProcess, _ user: String, _ key: TestSigningKey,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (connection, reply) = try login(broker, user, key)
        #expect(reply.errorCode == .unauthorized, "\(reply)", sourceLocation: sourceLocation)
        #expect(try connection.waitForClose(timeout: .seconds(5)).code == 4401, sourceLocation: sourceLocation)
    }

    /// Waits until the counter `sample` of `/metrics` reaches `value` (5 s: a file change is in
    /// force within 5 s, PROTOCOL §3).
    private func waitFor(_ broker: BrokerProcess, _ sample: String, atLeast value: Int, timeout: TimeInterval = 5) throws -> Bool {
        try eventually(timeout: timeout) { (try broker.metric(sample) ?? 0) >= value }
    }

    @Test("jwksFile: add the new key, old tokens still log in; remove the old one, its new logins are refused and its sessions keep running; garbage keeps the keys")
    func fileRotation() throws {
        let file = try KeyFile([Self.old])
        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "secretEnv": NSNull(), "jwksFile": file.path]])
        let refreshes = #"rollcall_jwks_refreshes_total{source="file"}"#
        #expect(try broker.metric(refreshes) == 1)
        let (alice, aliceLogin) = try login(broker, "alice", Self.old)
        #expect(aliceLogin.ok, "\(aliceLogin)")
        #expect(try alice.join("lobby").ok)

        try file.write(TestSigningKey.jwks([Self.old, Self.new]))
        #expect(try waitFor(broker, refreshes, atLeast: 2), "the added key is in force within 5 s")
        let (bob, bobLogin) = try login(broker, "bob", Self.new)
        #expect(bobLogin.ok, "\(bobLogin)")
        #expect(try login(broker, "carol", Self.old).1.ok, "the old key still logs in")

        try file.write(TestSigningKey.jwks([Self.new]))
        #expect(try waitFor(broker, refreshes, atLeast: 3))
        try expectRefused(broker, "dave", Self.old)
        #expect(try broker.metric(#"rollcall_logins_refused_total{reason="unknown_kid"}"#) == 1)
        // alice logged in with the removed key: her session runs on.
        #expect(try alice.call("ping")["serverTime"] != nil)
        #expect(try bob.join("lobby").ok)
        #expect(try alice.channelOp("getOnlineUsers", "lobby")["users"] == [["userId": "alice"], ["userId": "bob"]])
        #expect(try alice.refresh(token: Self.old.token(sub: "alice", ttl: 600)).errorCode == .unauthorized)
        #expect(try alice.refresh(token: Self.new.token(sub: "alice", ttl: 600)).ok)

        try file.write("{\"keys\": [")
        #expect(try waitFor(broker, #"rollcall_jwks_refresh_failures_total{source="file"}"#, atLeast: 1))
        #expect(try login(broker, "erin", Self.new).1.ok, "a file that no longer parses keeps the keys")
        #expect(try broker.metric(#"rollcall_jwks_keys{source="file"}"#) == 1)
        #expect(eventually(timeout: 10) { broker.stderrText.contains("auth.jwksFile \(file.path): not JSON") }, "\(broker.stderrText)")
    }

    @Test("jwksUrl: fetched at start and every jwksRefreshSeconds; a failed fetch keeps the keys and is counted; a new set rotates")
    func urlRefresh() throws {
        let server = try WebhookReceiver()
        defer { server.stop() }
        let served = ServedAnswer(.json(200, Array(TestSigningKey.jwks([Self.old, Self.ec]).utf8)))
        server.answer { _ in served.current }
        let url = "http://127.0.0.1:\(server.port)/.well-known/jwks.json"
        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "secret": "hs256-secret-of-at-least-32-bytes!", "jwksUrl": url,
                                                         "jwksRefreshSeconds": 1]])
        #expect(server.requests.first?.method == "GET")
        #expect(server.requests.first?.path == "/.well-known/jwks.json")
        let (alice, aliceLogin) = try login(broker, "alice", Self.old)
        #expect(aliceLogin.ok, "\(aliceLogin)")
        #expect(try login(broker, "bob", Self.ec).1.ok)
        #expect(try broker.metric(#"rollcall_jwks_keys{source="url"}"#) == 2)

        let failures = #"rollcall_jwks_refresh_failures_total{source="url"}"#
        served.current = .status(503)
        #expect(try waitFor(broker, failures, atLeast: 1))
        served.current = .json(200, Array("not a key set".utf8))
        #expect(try waitFor(broker, failures, atLeast: 2))
        #expect(try login(broker, "carol", Self.old).1.ok, "failed fetches keep the keys in force")
        #expect(broker.stderrText.contains("auth.jwksUrl \(url): answered HTTP 503, not 200"), "\(broker.stderrText)")

        served.current = .json(200, Array(TestSigningKey.jwks([Self.new]).utf8))
        #expect(try eventually(timeout: 5) { try broker.metric(#"rollcall_jwks_keys{source="url"}"#) == 1 })
        #expect(try login(broker, "dave", Self.new).1.ok)
        try expectRefused(broker, "erin", Self.old)
        try expectRefused(broker, "frank", Self.ec)
        #expect(try alice.call("ping")["serverTime"] != nil, "a session of a removed key runs on")
        // HS256 with the secret works beside the key set.
        let hs = try broker.connect()
        #expect(try hs.login(userId: "gina", token: JWTMinter.mint(secret: "hs256-secret-of-at-least-32-bytes!", userId: "gina", ttlSeconds: 60,
                                                                  now: Int64(Date().timeIntervalSince1970 * 1000))).ok)
        #expect(try broker.metric(#"rollcall_jwks_refreshes_total{source="url"}"#) ?? 0 >= 2)
    }

    @Test("jwksUrl with a host name: resolved off the loop (localhost); a name that does not resolve stops the start")
    func hostNames() throws {
        let server = try WebhookReceiver()
        defer { server.stop() }
        server.answer { _ in .json(200, Array(TestSigningKey.jwks([Self.new]).utf8)) }
        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "jwksUrl": "http://localhost:\(server.port)/jwks"]])
        #expect(try login(broker, "alice", Self.new).1.ok)
        #expect(server.requests.first?.headers["host"] == "localhost:\(server.port)")

        let refused = try ExternalCommand.runBroker(config: [
            "listen": ["host": "127.0.0.1"], "storage": ["path": NSNull()],
            "auth": ["mode": "jwt", "jwksUrl": "http://nonexistent.invalid/jwks"],
        ], timeout: 20)
        #expect(refused.status == 1)
        // "does not resolve" at once where the resolver answers; the fetch's 10 s bound otherwise.
        #expect(refused.stderr.contains("auth.jwksUrl http://nonexistent.invalid/jwks: the host nonexistent.invalid does not resolve")
                || refused.stderr.contains("auth.jwksUrl http://nonexistent.invalid/jwks: no complete answer within 10 s"), "\(refused.stderr)")
    }

    @Test("algorithm confusion, alg none and a wrong curve are refused on the wire with UNAUTHORIZED and 4401")
    func refusalsOnTheWire() throws {
        let file = try KeyFile([Self.old, Self.ec])
        let broker = try BrokerProcess(config: ["auth": ["mode": "jwt", "secret": "hs256-secret-of-at-least-32-bytes!", "jwksFile": file.path]])
        let now = Int(Date().timeIntervalSince1970)
        let payload = #"{"sub":"mallory","exp":\#(now + 60)}"#
        let tokens = [
            TestSigningKey.hs256(header: #"{"alg":"HS256","kid":"2026-01"}"#, payload: payload, key: Array(Self.old.publicKeyPEM.utf8)),
            TestSigningKey.base64URL(Array(#"{"alg":"none"}"#.utf8)) + "." + TestSigningKey.base64URL(Array(payload.utf8)) + ".",
            TestSigningKey.p256(kid: "2026-01").token(sub: "mallory"),
        ]
        for token in tokens {
            let connection = try broker.connect()
            #expect(try connection.login(userId: "mallory", token: token).errorCode == .unauthorized)
            #expect(try connection.waitForClose(timeout: .seconds(5)).code == 4401)
        }
        for (reason, count) in [("bad_signature", 1), ("unsupported_algorithm", 1), ("key_mismatch", 1)] {
            #expect(try broker.metric(#"rollcall_logins_refused_total{reason="\#(reason)"}"#) == count, "\(reason)")
        }
    }

    @Test("at start, a key set that cannot be read or holds no usable key stops the broker, naming the key")
    func startRefusals() throws {
        let unreachable = try WebhookReceiver.freePort()
        let notFound = try WebhookReceiver()
        defer { notFound.stop() }
        notFound.answer { _ in .status(404) }
        let unusable = try KeyFile([])
        try unusable.write(#"{"keys":[{"kty":"EC","crv":"P-384","kid":"big","x":"AA","y":"AA"}]}"#)
        let cases: [([String: Any], String)] = [
            (["mode": "jwt", "jwksFile": "/nonexistent/jwks.json"], "auth.jwksFile /nonexistent/jwks.json: cannot be opened"),
            (["mode": "jwt", "jwksFile": unusable.path], #"auth.jwksFile \#(unusable.path): no usable key: key "big" (EC P-384)"#),
            (["mode": "jwt", "jwksUrl": "http://127.0.0.1:\(unreachable)/jwks"], "auth.jwksUrl http://127.0.0.1:\(unreachable)/jwks: cannot"),
            (["mode": "jwt", "jwksUrl": "http://127.0.0.1:\(notFound.port)/jwks"], "auth.jwksUrl http://127.0.0.1:\(notFound.port)/jwks: answered HTTP 404"),
            (["mode": "jwt", "jwksUrl": "ftp://keys.example/jwks"], "auth.jwksUrl"),
            (["mode": "jwt", "secretEnv": NSNull()], "auth.jwksFile, auth.jwksUrl"),
        ]
        for (auth, mentions) in cases { _ = try Self.expectStartRefused(auth: auth, mentioning: mentions) }
    }

    /// Starts the broker (loopback, no storage) with the `auth` section and expects it to refuse:
    /// exit status 1, `mentions` on stderr, never `listening on`. Returns stderr.
    static func expectStartRefused(auth: [String: Any], mentioning mentions: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let config: [String: Any] = ["listen": ["host": "127.0.0.1"], "storage": ["path": NSNull()], "auth": auth]
        let result = try ExternalCommand.runBroker(config: config, timeout: 20)
        #expect(result.status == 1, "\(auth): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(mentions), "\(auth): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stdout.contains("listening on"), "\(auth)", sourceLocation: sourceLocation)
        return result.stderr
    }
}
