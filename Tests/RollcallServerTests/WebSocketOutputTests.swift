@testable import RollcallServer
import RollcallCore
import Testing

/// The writer's state as the server makes it from its limits.
@Suite("WebSocketOutput")
struct WebSocketOutputTests {
    @Test func theLimitsMakeThePolicyAndTheBuffersFirstSize() {
        var limits = Configuration.Limits()
        limits.maxBatchBytes = 32_768
        limits.maxOutboundBytes = 1 << 20
        let histograms = MetricsExposition().histograms
        let output = WebSocketOutput(limits: limits, histograms: histograms)
        #expect(output.policy == OutboundPolicy(maxOutboundBytes: 1 << 20, maxBatchBytes: 32_768))
        #expect(output.writer.capacity == 32_768)
        #expect(output.histograms === histograms)
        limits.maxBatchBytes = 100
        #expect(WebSocketOutput(limits: limits, histograms: histograms).writer.capacity == 1024)
    }

    @Test func onlyAConnectionThatCompressesIsKeptFromDirectWrites() {
        var output = WebSocketOutput(limits: Configuration.Limits(), histograms: MetricsExposition().histograms)
        #expect(output.isUncompressed(ConnectionID(1)))
        output.compressingConnections.insert(ConnectionID(2))
        #expect(output.isUncompressed(ConnectionID(1)))
        #expect(!output.isUncompressed(ConnectionID(2)))
        #expect(output.now == 0)  // no coalescer (lws' poll loop): written connections are not stamped busy
    }
}
