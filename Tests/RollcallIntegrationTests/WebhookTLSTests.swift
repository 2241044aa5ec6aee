import Foundation
import RollcallProtocol
import RollcallTestSupport
import Testing

/// Webhooks over https (PROTOCOL §11): the receiver's self-signed certificate (SAN
/// IP:127.0.0.1) is trusted through `webhooks.caFile`; without it verification fails and the
/// batch is retried, never delivered.
@Suite struct WebhookTLSTests {
    /// An https receiver printing `BATCH <signature> <body>` per POST; its certificate names
    /// IP:127.0.0.1.
    static func receiver() throws -> TLSPythonServer {
        try TLSPythonServer(subjectAltName: "IP:127.0.0.1", handler: """
                def do_POST(self):
                    body = self.rfile.read(int(self.headers["Content-Length"]))
                    print("BATCH", self.headers["Rollcall-Signature"], body.decode(), flush=True)
                    self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
            """)
    }

    @Test func httpsWithTheReceiversCertificateInCaFile() throws {
        let receiver = try Self.receiver()
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
        let receiver = try Self.receiver()
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
