import RollcallCore
import RollcallProtocol
@testable import RollcallServer
import Testing

/// The POST body and its signature (PROTOCOL §11).
@Suite struct WebhookBodyTests {
    @Test func eventsKeepTheirBytesAndGainAnID() throws {
        let presence = Array(#"{"event":"presence","type":"join","channel":"a","seq":1}"#.utf8)
        let channel = Array(#"{"event":"channel","type":"occupied"}"#.utf8)
        let batch = WebhookDelivery.Batch(
            id: "p-b7",
            events: [.init(id: "p-e1", bytes: presence, queuedAt: 0), .init(id: "p-e2", bytes: channel, queuedAt: 0)],
            firstAttemptAt: 0, attempts: 1)
        let body = WebhookBatchBody.encode(batch, sentAt: 1_763_794_840_002, node: "standalone")
        #expect(String(decoding: body, as: UTF8.self) == #"{"id":"p-b7","sentAt":1763794840002,"node":"standalone","events":["#
            + #"{"id":"p-e1","event":"presence","type":"join","channel":"a","seq":1},"#
            + #"{"id":"p-e2","event":"channel","type":"occupied"}]}"#)
        let parsed = try JSONParser.parse(body)
        #expect(parsed["events"]?.arrayValue?.count == 2)
    }

    @Test func theSignatureIsHexHMACOfTimestampDotBody() {
        // Reference value: printf '1700000000000.{"a":1}' | openssl dgst -sha256 -hmac s3cret
        let header = WebhookSignature.header(secret: "s3cret", sentAt: 1_700_000_000_000, body: Array(#"{"a":1}"#.utf8))
        #expect(header == "t=1700000000000,v1=8a6f992378d0d47b6fcdf1cc8d72e46ba5c789b2c9d3a538be31fe07d598ba6d")
        #expect(header.hasPrefix("t=1700000000000,v1="))
        #expect(header.count == "t=1700000000000,v1=".count + 64)
    }

    @Test func everySecretAddsOneV1InOrderARepeatedOneSignsOnce() {
        // webhooks.secrets (1.2): printf '1700000000000.{"a":1}' | openssl dgst -sha256 -hmac old
        let header = WebhookSignature.header(secrets: ["s3cret", "old", "s3cret"], sentAt: 1_700_000_000_000, body: Array(#"{"a":1}"#.utf8))
        #expect(header == "t=1700000000000,v1=8a6f992378d0d47b6fcdf1cc8d72e46ba5c789b2c9d3a538be31fe07d598ba6d,v1=1c683a7d239cee55f591aad38a9949f9328c903f1e2ae7c96b10a635d35a8698")
    }

    @Test func rateLimitedLoggingCountsWhatItHolds() {
        var log = RateLimitedLog(intervalMs: 1000)
        #expect(log.allow(now: 0) == 0)
        #expect(log.allow(now: 500) == nil)
        #expect(log.allow(now: 900) == nil)
        #expect(log.allow(now: 1000) == 2)
    }
}
