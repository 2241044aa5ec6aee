import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 8: the reaper handed out 100 held sessions per tick per node, so a dead node
/// with many sessions had its `timeout`s minutes late (50,000 sessions: 500 ticks). A full batch
/// now asks for the next one at once.
@Suite("Cluster: a dead node's sessions time out on time")
struct ClusterReapSpeedTests {
    @Test("1500 sessions of a killed node are all gone within nodeTimeout + heartbeat + their hold, plus slack")
    func aDeadNodesSessionsTimeOutTogether() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "reap:", heartbeatSeconds: 0.5)
        let count = 1500
        var clients: [ClusterBed.Client] = []
        for index in 0..<count {
            let client = bed.open(on: 1)
            clients.append(client)
            client.nextId = 1
            let login = #"{"id":1,"op":"login","userId":"u\#(index)","presenceTimeout":5}"#
            bed.feed(1, .received(client.connection, Array(login.utf8)))
        }
        try bed.pump(until: { clients.allSatisfy { $0.replies[1] != nil } }, timeout: 60, what: "\(count) logins")
        #expect(clients.allSatisfy { $0.replies[1]?["ok"]?.boolValue == true })

        bed.stop(node: 1)
        let stoppedAt = Date()
        try bed.pump(until: {
            (try? bed.redis.command(["ZCARD", "reap:held"])) == ":0"
                && (try? bed.redis.command(["SCARD", "reap:ns:n2"])) == ":0"
                && (try? bed.redis.command(["ZSCORE", "reap:nodes", "n2"])) == "$-1"
        }, timeout: 40, what: "every session of the dead node timed out")
        let took = Date().timeIntervalSince(stoppedAt)
        // Declared dead within nodeTimeout (1 s) + a heartbeat (0.5 s), held 5 s, then reaped:
        // 6.5 s; with 100 per tick it took 15 more ticks (7.5 s) on top.
        #expect(took < 9.5, "the last session timed out \(String(format: "%.1f", took)) s after the node stopped")
    }
}
