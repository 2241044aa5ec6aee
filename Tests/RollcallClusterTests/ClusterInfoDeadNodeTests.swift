import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import RollcallTestSupport
import Testing

/// Issue 29, the faults bench's `getInfo` finding: a node killed -9 left the live window
/// (`nodeTimeoutSeconds` after its last beat) before a reaper declared it dead and handed its
/// sessions over as held: until that tick (up to `heartbeatSeconds`, longer in a grace window)
/// `getInfo` counted its sessions neither as a live node's nor as held, though they were still
/// listed and resumable (PROTOCOL §10: `sessions` counts live and held sessions).
@Suite("Cluster: getInfo counts a dead node's sessions until they end")
struct ClusterInfoDeadNodeTests {
    @Test("getInfo on a live node never counts fewer sessions than live + held while a killed node's are handed over")
    func countsADeadNodesSessionsThroughTheHandOver() throws {
        // heartbeatSeconds 0.4: the reaper ticks every 0.4 s, so the gap was up to 0.4 s wide.
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "info:", heartbeatSeconds: 0.4)
        let dying = 12
        for index in 0..<dying { try bed.login("d\(index)", on: 1, ["presenceTimeout": .int(5)]) }
        try bed.login("alive", on: 0)
        let expected = dying + 1
        let before = try bed.api("getInfo", [:], on: 0)
        #expect(before.body["result"]?["sessions"]?.numberValue?.intValue == expected, "\(before.body.compactString)")

        bed.stop(node: 1)
        var counts: [Int] = []
        var handedOver = false
        var afterHandOver = 0
        // Until the reaper declared n2 dead and every one of its sessions is held, then a few
        // more answers: each must count all 13 (none has timed out: their hold is 5 s).
        let deadline = Date().addingTimeInterval(20)
        while afterHandOver < 3 {
            guard Date() < deadline else { throw TestSupportError("the killed node's sessions were not handed over as held within 20 s") }
            let answer = try bed.api("getInfo", [:], on: 0)  // turns the loop: the nodes' timers run meanwhile
            counts.append(answer.body["result"]?["sessions"]?.numberValue?.intValue ?? -1)
            if handedOver {
                afterHandOver += 1
            } else {
                handedOver = try bed.redis.command(["ZCARD", "info:{0}held"]) == ":\(dying)" && bed.redis.command(["EXISTS", "info:ns:n2"]) == ":0"
            }
        }
        #expect(counts.allSatisfy { $0 == expected }, "getInfo's sessions over the hand-over: \(counts.map(String.init).joined(separator: " "))")
    }
}
