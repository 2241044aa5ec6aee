import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `tls.certFile` / `tls.keyFile`: wss:// and https:// on one port, and the start-up checks
/// that stop the broker on a missing or bad file (issue 5, docs/security.md).
@Suite("TLS")
struct TLSTests {
    /// Self-signed PEM files made with the `openssl` command at test time, in a temp directory.
    final class Files: @unchecked Sendable {
        let directory: URL
        var cert: String { path("cert.pem") }
        var key: String { path("key.pem") }
        /// A valid key of another pair (does not match `cert`).
        var otherKey: String { path("other.key") }
        /// A 1024-bit pair: parses and matches, but OpenSSL's server refuses it ("ee key too
        /// small"), so only libwebsockets' context creation catches it.
        var weakCert: String { path("weak.pem") }
        var weakKey: String { path("weak.key") }

        init() throws {
            guard let openssl = ExternalCommand.which("openssl") else {
                throw HarnessError("the openssl command is needed (make deps installs it)")
            }
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (bits, key, cert) in [("2048", "key.pem", "cert.pem"), ("2048", "other.key", "other.pem"), ("1024", "weak.key", "weak.pem")] {
                let result = try ExternalCommand.run(openssl, [
                    "req", "-x509", "-newkey", "rsa:\(bits)", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "1",
                    "-keyout", directory.appendingPathComponent(key).path, "-out", directory.appendingPathComponent(cert).path,
                ])
                guard result.status == 0 else { throw HarnessError("openssl req failed: \(result.stderr)") }
            }
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        /// Writes `text` to a new file in the directory and returns its path.
        func write(_ name: String, _ text: String) throws -> String {
            try Data(text.utf8).write(to: directory.appendingPathComponent(name))
            return path(name)
        }

        deinit { try? FileManager.default.removeItem(at: directory) }
    }

    static let files = Result { try Files() }

    func tlsBroker(_ files: Files) throws -> BrokerProcess {
        try BrokerProcess(config: ["tls": ["certFile": files.cert, "keyFile": files.key]])
    }

    @Test("with tls files the broker serves wss://: login, join and publish work")
    func wssSession() throws {
        let files = try Self.files.get()
        let broker = try tlsBroker(files)
        let url = "wss://127.0.0.1:\(broker.port)/v1"
        let alice = try RollcallConnection.connect(url: url, subprotocol: "rollcall.v1", allowSelfSignedCertificate: true)
        let bob = try RollcallConnection.connect(url: url, allowSelfSignedCertificate: true)
        #expect(try alice.login(userId: "alice", platform: "cli").ok)
        #expect(try bob.login(userId: "bob", platform: "cli").ok)
        #expect(try bob.request("join", ["channel": "lobby"]).ok)
        #expect(try alice.request("publish", ["channel": "lobby", "message": "over tls"]).ok)
        let event = try bob.waitForEvent(timeout: .seconds(5)) { $0.name == "message" }
        #expect(event.object["message"]?.stringValue == "over tls")
    }

    @Test("the client verifies certificates by default; plain ws:// to a TLS port fails")
    func verificationAndPlainRefused() throws {
        let files = try Self.files.get()
        let broker = try tlsBroker(files)
        #expect(throws: ClientError.self, "an untrusted self-signed certificate is refused by default") {
            _ = try RollcallConnection.connect(url: "wss://127.0.0.1:\(broker.port)/v1", timeout: .seconds(5))
        }
        #expect(throws: ClientError.self, "the TLS port speaks no plain WebSocket") {
            _ = try RollcallConnection.connect(url: "ws://127.0.0.1:\(broker.port)/v1", timeout: .seconds(5))
        }
        #expect(broker.isRunning)
    }

    @Test("rollcall-cli talks wss:// with --insecure and refuses the self-signed certificate without it")
    func cliOverTLS() throws {
        let files = try Self.files.get()
        let broker = try tlsBroker(files)
        let url = "wss://127.0.0.1:\(broker.port)/v1"
        let insecure = try ExternalCommand.run(CLITests.cliBinary, ["--url", url, "--insecure", "--user", "alice", "ping"])
        #expect(insecure.status == 0, "\(insecure.stderr)")
        #expect(insecure.stdout.contains("server time"))
        let verified = try ExternalCommand.run(CLITests.cliBinary, ["--url", url, "--user", "alice", "--timeout", "5", "ping"])
        #expect(verified.status == 2, "cannot connect: \(verified.stderr)")
    }

    @Test("https:// serves /healthz and /metrics on the same port")
    func httpsHealthz() throws {
        let files = try Self.files.get()
        let curl = try #require(ExternalCommand.which("curl"), "the curl command is needed (make deps installs it)")
        let broker = try tlsBroker(files)
        let health = try ExternalCommand.run(curl, ["-sk", "--max-time", "10", "-w", "\n%{http_code}", "https://127.0.0.1:\(broker.port)/healthz"])
        #expect(health.status == 0, "\(health.stderr)")
        #expect(health.stdout == "ok\n200", "\(health.stdout)")
        let metrics = try ExternalCommand.run(curl, ["-sk", "--max-time", "10", "https://127.0.0.1:\(broker.port)/metrics"])
        #expect(metrics.stdout.contains("rollcall_up 1"))
        #expect(metrics.stdout.contains("rollcall_connections_refused_total"), "the whole page arrives (HTTP/1.1, not cut by h2)")
        let plain = try ExternalCommand.run(curl, ["-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(broker.port)/healthz"])
        #expect(plain.stdout != "200", "plain HTTP is not served on the TLS port")
    }

    /// Starts the broker (and `--check-config`) with `tls` and expects exit 1 with stderr
    /// naming `key` and `file` and containing `reason`.
    func expectRefusal(_ tls: [String: Any], key: String, file: String, reason: String, alsoNaming: [String] = [],
                       checkConfig: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let config = BrokerProcess.merge(BrokerProcess.baseConfig, ["tls": tls])
        let configURL = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-tls-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: config).write(to: configURL)
        defer { try? FileManager.default.removeItem(at: configURL) }
        var variants: [[String]] = [["--config", configURL.path, "--port", "0"]]
        if checkConfig { variants.append(["--config", configURL.path, "--check-config"]) }
        for arguments in variants {
            let result = try ExternalCommand.run(BrokerProcess.binary, arguments, timeout: 20)
            #expect(result.status == 1, "\(arguments.last!): exit \(result.status); stderr: \(result.stderr)", sourceLocation: sourceLocation)
            #expect(!result.stdout.contains("listening on"), sourceLocation: sourceLocation)
            #expect(result.stderr.contains(key) && result.stderr.contains(file) && result.stderr.contains(reason),
                    "\(arguments.last!): stderr does not name \(key) \(file) (\(reason)): \(result.stderr)", sourceLocation: sourceLocation)
            let line = result.stderr.split(separator: "\n").first { $0.hasPrefix("rollcall:") } ?? ""
            for detail in alsoNaming {
                #expect(line.contains(detail), "the error line names \(detail): \(line)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a missing or unreadable certificate or key stops the broker with exit 1, naming the file")
    func missingFiles() throws {
        let files = try Self.files.get()
        let missing = files.path("no-such.pem")
        try expectRefusal(["certFile": missing, "keyFile": files.key], key: "tls.certFile", file: missing, reason: "No such file")
        try expectRefusal(["certFile": files.cert, "keyFile": missing], key: "tls.keyFile", file: missing, reason: "No such file")
        let underAFile = files.cert + "/key.pem"
        try expectRefusal(["certFile": files.cert, "keyFile": underAFile], key: "tls.keyFile", file: underAFile, reason: "cannot be read")
        try expectRefusal(["certFile": files.directory.path, "keyFile": files.key], key: "tls.certFile",
                          file: files.directory.path, reason: "not a regular file")
    }

    @Test("an invalid certificate or key, or a key of another pair, stops the broker naming the file")
    func invalidFiles() throws {
        let files = try Self.files.get()
        let garbage = try files.write("garbage.pem", "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        let empty = try files.write("empty.pem", "")
        try expectRefusal(["certFile": garbage, "keyFile": files.key], key: "tls.certFile", file: garbage, reason: "not a PEM certificate")
        try expectRefusal(["certFile": empty, "keyFile": files.key], key: "tls.certFile", file: empty, reason: "is empty")
        try expectRefusal(["certFile": files.cert, "keyFile": files.cert], key: "tls.keyFile", file: files.cert, reason: "not an unencrypted PEM private key")
        try expectRefusal(["certFile": files.key, "keyFile": files.key], key: "tls.certFile", file: files.key, reason: "not a PEM certificate")
        try expectRefusal(["certFile": files.cert, "keyFile": files.otherKey], key: "tls.keyFile", file: files.otherKey, reason: "does not match")
    }

    @Test("files libwebsockets itself refuses (a 1024-bit key) stop the broker with a clear message")
    func contextCreationFailure() throws {
        let files = try Self.files.get()
        // --check-config only parses the files; the TLS library's policy is met at start.
        try expectRefusal(["certFile": files.weakCert, "keyFile": files.weakKey], key: "tls.certFile",
                          file: files.weakCert, reason: "cannot start TLS", alsoNaming: ["tls.keyFile", "key too small"],
                          checkConfig: false)
    }
}
