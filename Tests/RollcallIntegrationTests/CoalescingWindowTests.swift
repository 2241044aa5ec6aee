import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// `http.coalesceWindowSeconds` and `http.coalesceBusySeconds` (issue 31): the window is the
/// operator's choice. With the default a busy reader's events wait for the window and share
/// frames; with 0 nothing is ever held. Either way every message arrives, in order.
@Suite("Coalescing window", .serialized)
struct CoalescingWindowTests {
    @Test("a busy reader gets every message in order; only a window above 0 holds events",
          arguments: [0.0, 0.004])
    func theWindowIsTheOperatorsChoice(window: Double) throws {
        let broker = try BrokerProcess(config: [
            "http": ["coalesceWindowSeconds": window, "coalesceBusySeconds": max(window, 0.016)],
            "limits": ["requestsPerSecond": 100_000, "requestBurst": 100_000],
        ])
        let bed = try SlowConsumerTests.Bed(broker: broker, readers: 2)
        defer { bed.close() }
        let shape = SlowConsumerTests.Shape(maxOutboundBytes: 4_194_304, maxBatchBytes: 16384, messageBytes: 200,
                                            pace: .pipelinedFours, messages: 400)
        try bed.publish(shape)
        #expect(bed.everyReaderHasAll(shape.messages), "slowest reader has \(bed.log.minimumCount()) of \(shape.messages)")
        #expect(bed.log.firstDisorder(expected: shape.messages) == nil)
        let held = try #require(try broker.metric("rollcall_writes_coalesced_total"))
        if window == 0 {
            #expect(held == 0, "no event waits when the window is 0")
        } else {
            #expect(held > 0, "readers sent 400 messages back to back are busy: their events wait for the window")
        }
    }
}
