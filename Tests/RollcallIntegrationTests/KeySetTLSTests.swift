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

    /// The https key set server: every GET answers the key set (a file, `sys.argv[3]`) and
    /// prints `GET <path>`. Its certificate names `localhost` only.
    final class KeySetServer {
        let server: TLSPythonServer
        var port: Int { server.port }
        var cert: String { server.cert }
        private let jwks: URL

        init() throws {
            jwks = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-jwks-\(UUID().uuidString).json")
            try Data(TestSigningKey.jwks([KeySetTLSTests.key]).utf8).write(to: jwks)
            server = try TLSPythonServer(subjectAltName: "DNS:localhost", handler: """
                    def do_GET(self):
                        body = open(sys.argv[3], "rb").read()
                        print("GET", self.path, flush=True)
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                """, arguments: [jwks.path])
        }

        var requests: Int { server.output.stdoutText.split(separator: "\n").filter { $0.hasPrefix("GET ") }.count }

        deinit { try? FileManager.default.removeItem(at: jwks) }
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
        let byName = "https://localhost:\(server.port)/jwks"
        let byAddress = "https://127.0.0.1:\(server.port)/jwks"
        let cases: [([String: Any], String)] = [
            (["mode": "jwt", "jwksUrl": byName], "auth.jwksUrl \(byName): cannot fetch it: "),
            (["mode": "jwt", "jwksUrl": byAddress, "jwksCaFile": server.cert], "auth.jwksUrl \(byAddress): cannot fetch it: "),
            (["mode": "jwt", "jwksUrl": byName, "jwksCaFile": "/nonexistent/ca.pem"], "auth.jwksCaFile /nonexistent/ca.pem cannot be read"),
        ]
        for (auth, mentions) in cases {
            let stderr = try KeySetIntegrationTests.expectStartRefused(auth: auth, mentioning: mentions)
            if auth["jwksCaFile"] as? String != "/nonexistent/ca.pem" {
                #expect(stderr.contains("the TLS handshake failed"), "the failure says where to look: \(stderr)")
            }
        }
        #expect(server.requests == 0, "no key set was handed to a broker that could not verify the server")
    }
}
