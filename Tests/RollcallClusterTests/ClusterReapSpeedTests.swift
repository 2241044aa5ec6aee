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
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "reap:", heartbeatSeconds: 1)
        let count = 1500
        var waiting = Array(0..<count)
        var rounds = 0
        // In batches of 100, a login that failed tried again (a loaded machine may answer
        // UNAVAILABLE when Redis is slow to answer).
        while !waiting.isEmpty, rounds < 100 {
            rounds += 1
            let batch = waiting.prefix(100).map { index -> (Int, ClusterBed.Client) in
                let client = bed.open(on: 1)
                client.nextId = 1
                bed.feed(1, .received(client.connection, Array(#"{"id":1,"op":"login","userId":"u\#(index)","presenceTimeout":5}"#.utf8)))
                return (index, client)
            }
            try bed.pump(until: { batch.allSatisfy { $0.1.replies[1] != nil } }, timeout: 30, what: "a batch of logins")
            let failed = batch.filter { $0.1.replies[1]?["ok"]?.boolValue != true }
            for (_, client) in failed { bed.disconnect(client, abnormally: false) }
            waiting = failed.map(\.0) + waiting.dropFirst(batch.count)
        }
        let loggedIn = count - waiting.count
        #expect(loggedIn == count, "\(loggedIn) of \(count) logged in")

        bed.stop(node: 1)
        let stoppedAt = Date()
        try bed.pump(until: {
            (try? bed.redis.command(["ZCARD", "reap:{0}held"])) == ":0"
                && (try? bed.redis.command(["SCARD", "reap:{0}ns:n2"])) == ":0"
                && (try? bed.redis.command(["ZSCORE", "reap:{0}nodes", "n2"])) == "$-1"
        }, timeout: 40, what: "every session of the dead node timed out")
        let took = Date().timeIntervalSince(stoppedAt)
        // Declared dead within nodeTimeout (2 s) + a heartbeat (1 s), held 5 s, then reaped:
        // 8 s; with 100 per tick it took 15 more ticks (15 s) on top.
        #expect(took < 15, "the last session timed out \(String(format: "%.1f", took)) s after the node stopped")
    }
}
