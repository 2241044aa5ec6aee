import Foundation
import RollcallProtocol
import RollcallTestSupport
import Testing

/// `auth.jwksUrl` over https (PROTOCOL §3, 1.2): a JWK Set served by an https server in
/// Python's standard library, with a self-signed certificate for the name `localhost` only.
/// Trusted through `auth.jwksCaFile`, the set is fetched and its tokens log in; without the CA
/// file (the system's store does not trust it) or at an address the certificate does not name,
/// verification fails and the broker does not start.
@Suite("Key sets over https", .serialized)
struct KeySetTLSTests {
    static let key = TestSigningKey.rsa(kid: "tls-1")

    /// An https server answering every GET with the key set, printing `GET <path>` per request.
    static let serverScript = """
        import http.server, ssl, sys
        body = open(sys.argv[3], "rb").read()
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                print("GET", self.path, flush=True)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args): pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("listening on 127.0.0.1:%d" % server.server_port, flush=True)
        server.serve_forever()
        """

    /// The https key set server, its certificate (the CA a broker is given) and its port.
    final class KeySetServer {
        let process: ChildProcess
        let port: Int
        let directory: URL
        var cert: String { directory.appendingPathComponent("cert.pem").path }

        init() throws {
            guard let openssl = ExternalCommand.which("openssl") else { throw HarnessError("the openssl command is needed") }
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-jwks-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let privateKey = directory.appendingPathComponent("key.pem").path
            let made = try ExternalCommand.run(openssl, [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1",
                "-addext", "subjectAltName=DNS:localhost", "-keyout", privateKey,
                "-out", directory.appendingPathComponent("cert.pem").path,
            ])
            guard made.status == 0 else { throw HarnessError("openssl req failed: \(made.stderr)") }
            let jwks = directory.appendingPathComponent("jwks.json")
            try Data(TestSigningKey.jwks([KeySetTLSTests.key]).utf8).write(to: jwks)
            let script = directory.appendingPathComponent("server.py")
            try Data(KeySetTLSTests.serverScript.utf8).write(to: script)
            process = try ChildProcess(executable: "/usr/bin/env",
                                       arguments: ["python3", script.path, directory.appendingPathComponent("cert.pem").path, privateKey, jwks.path],
                                       directory: BrokerProcess.packageRoot.path)
            guard let line = process.output.waitForStdoutLine(prefix: "listening on ", timeout: 15),
                  let port = line.split(separator: ":").last.flatMap({ Int($0) }) else {
                process.send(SIGKILL)
                throw HarnessError("the https key set server did not start: \(process.output.stderrText)")
            }
            self.port = port
        }

        var requests: Int { process.output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("GET ") }.count }

        deinit {
            process.send(SIGKILL)
            _ = process.waitForExit(timeout: 5)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test("https with the server's certificate in auth.jwksCaFile: fetched (by name, verified), and its tokens log in")
    func trustedThroughTheCaFile() throws {
        let server = try KeySetServer()
        let broker = try BrokerProcess(config: ["auth": [
            "mode": "jwt", "jwksUrl": "https://localhost:\(server.port)/jwks", "jwksCaFile": server.cert,
        ]])
        let connection = try broker.connect()
        #expect(try connection.login(userId: "alice", token: Self.key.token(sub: "alice", ttl: 600)).ok)
        #expect(server.requests >= 1)
        #expect(try broker.metric(#"rollcall_jwks_refreshes_total{source="url"}"#) ?? 0 >= 1)
    }

    @Test("a certificate the broker cannot verify stops the start, naming auth.jwksUrl: not in the system's store; at an address it does not name; an unreadable CA file")
    func unverifiedRefusals() throws {
        let server = try KeySetServer()
        let base: [String: Any] = ["listen": ["host": "127.0.0.1"], "storage": ["path": NSNull()]]
        let byName = "https://localhost:\(server.port)/jwks"
        let byAddress = "https://127.0.0.1:\(server.port)/jwks"
        let cases: [([String: Any], String)] = [
            (["mode": "jwt", "jwksUrl": byName], "auth.jwksUrl \(byName): cannot fetch it: "),
            (["mode": "jwt", "jwksUrl": byAddress, "jwksCaFile": server.cert], "auth.jwksUrl \(byAddress): cannot fetch it: "),
            (["mode": "jwt", "jwksUrl": byName, "jwksCaFile": "/nonexistent/ca.pem"], "auth.jwksCaFile /nonexistent/ca.pem cannot be read"),
        ]
        for (auth, mentions) in cases {
            var config = base
            config["auth"] = auth
            let result = try ExternalCommand.runBroker(config: config, timeout: 20)
            #expect(result.status == 1, "\(auth): \(result.stderr)")
            #expect(result.stderr.contains(mentions), "\(auth): \(result.stderr)")
            #expect(!result.stdout.contains("listening on"), "\(auth)")
            if auth["jwksCaFile"] as? String != "/nonexistent/ca.pem" {
                #expect(result.stderr.contains("the TLS handshake failed"), "the failure says where to look: \(result.stderr)")
            }
        }
        #expect(server.requests == 0, "no key set was handed to a broker that could not verify the server")
    }
}
