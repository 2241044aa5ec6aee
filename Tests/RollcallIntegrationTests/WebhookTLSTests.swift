import Foundation
import RollcallProtocol
import RollcallTestSupport
import Testing

/// Webhooks over https (PROTOCOL §11): the receiver's self-signed certificate (SAN
/// IP:127.0.0.1) is trusted through `webhooks.caFile`; without it verification fails and the
/// batch is retried, never delivered.
@Suite struct WebhookTLSTests {
    /// An https receiver in Python's standard library, printing `BATCH <signature> <body>` per POST.
    static let receiverScript = """
        import http.server, ssl, sys
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                print("BATCH", self.headers["Rollcall-Signature"], body.decode(), flush=True)
                self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
            def log_message(self, *args): pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("listening on 127.0.0.1:%d" % server.server_port, flush=True)
        server.serve_forever()
        """

    final class Receiver {
        let process: ChildProcess
        var output: OutputCollector { process.output }
        let port: Int
        let directory: URL
        var cert: String { directory.appendingPathComponent("cert.pem").path }

        init() throws {
            guard let openssl = ExternalCommand.which("openssl") else { throw HarnessError("the openssl command is needed") }
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-hooks-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let key = directory.appendingPathComponent("key.pem").path
            let made = try ExternalCommand.run(openssl, [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key,
                "-out", directory.appendingPathComponent("cert.pem").path,
            ])
            guard made.status == 0 else { throw HarnessError("openssl req failed: \(made.stderr)") }
            let script = directory.appendingPathComponent("receiver.py")
            try Data(WebhookTLSTests.receiverScript.utf8).write(to: script)
            process = try ChildProcess(executable: "/usr/bin/env", arguments: ["python3", script.path, directory.appendingPathComponent("cert.pem").path, key],
                                       directory: BrokerProcess.packageRoot.path)
            guard let line = process.output.waitForStdoutLine(prefix: "listening on ", timeout: 15),
                  let port = line.split(separator: ":").last.flatMap({ Int($0) }) else {
                process.send(SIGKILL)
                throw HarnessError("the https receiver did not start: \(process.output.stderrText)")
            }
            self.port = port
        }

        deinit {
            process.send(SIGKILL)
            _ = process.waitForExit(timeout: 5)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func httpsWithTheReceiversCertificateInCaFile() throws {
        let receiver = try Receiver()
        let broker = try BrokerProcess(config: ["webhooks": [
            "url": "https://127.0.0.1:\(receiver.port)/hooks", "secret": "tls-secret", "caFile": receiver.cert,
            "events": ["channel"], "batchMaxDelaySeconds": 0.05,
        ]])
        let alice = try broker.session("alice")
        #expect(try alice.join("room").ok)
        #expect(try eventually(timeout: 15) { receiver.output.stdoutText.contains("BATCH t=") })
        let line = try #require(receiver.output.stdoutText.split(separator: "\n").first { $0.hasPrefix("BATCH ") })
        let body = line.split(separator: " ", maxSplits: 2).last.map(String.init) ?? ""
        let batch = try JSONParser.parse(Array(body.utf8))
        #expect(batch["events"]?.arrayValue?.first?["type"]?.stringValue == "occupied")
        #expect(try eventually { try broker.metric("rollcall_webhook_batches_delivered_total") == 1 })
    }

    @Test func anUntrustedCertificateIsRefusedAndRetried() throws {
        let receiver = try Receiver()
        let broker = try BrokerProcess(config: ["webhooks": [
            "url": "https://127.0.0.1:\(receiver.port)/hooks", "secret": "tls-secret",
            "events": ["channel"], "batchMaxDelaySeconds": 0.05,
        ]])
        let alice = try broker.session("alice")
        #expect(try alice.join("room").ok)
        #expect(try eventually(timeout: 15) { (try broker.metric("rollcall_webhook_attempts_failed_total") ?? 0) >= 2 })
        #expect(try broker.metric("rollcall_webhook_batches_delivered_total") == 0)
        #expect(!receiver.output.stdoutText.contains("BATCH"))
    }

    @Test func anUnreadableCaFileStopsTheBroker() throws {
        let error = #expect(throws: HarnessError.self) {
            _ = try BrokerProcess(config: ["webhooks": [
                "url": "https://127.0.0.1:9/hooks", "secret": "s", "caFile": "/nonexistent/ca.pem",
            ]], startTimeout: 5)
        }
        #expect(error?.description.contains("WEBHOOK_SETUP_FAILED: webhooks.caFile /nonexistent/ca.pem cannot be read") == true)
    }
}
