import Foundation
@testable import RollcallCore
import RollcallProtocol
import RollcallTestSupport
@testable import RollcallRedisEngine
import Testing

/// Issue 29, the faults bench's join burst: 10,000 joins sent at once on one node queued ahead
/// of its heartbeat on its command link; a command waited past the Redis client's watchdog, the
/// link dropped, no beat reached Redis for `nodeTimeoutSeconds`, and the other nodes declared a
/// node that was alive and connected dead (it fenced itself: only about 2,000 joins answered ok).
/// A node now keeps at most ``ClusterLink/maxCommandsInFlight`` commands on the link; the rest
/// wait in the node, and one that cannot be sent in time is answered `UNAVAILABLE` unsent.
@Suite("Cluster: a burst of requests does not get its own node declared dead")
struct ClusterBurstTests {
    @Test("a burst of joins on one node: never fenced, every reply ok or UNAVAILABLE with retryAfterMs")
    func aBurstDoesNotFenceItsNode() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "burst:")  // nodeTimeoutSeconds 1
        let environment = ProcessInfo.processInfo.environment
        let count = environment["ROLLCALL_BURST"].flatMap(Int.init) ?? 3000
        let members = try logIn(count, on: 0, of: bed)
        let loggedInAt = Date()
        bed.links[0].heartbeat.slowestBeatMs = 0
        for (index, member) in members.enumerated() {
            member.nextId += 1
            bed.feed(0, .received(member.connection, Array(#"{"id":\#(member.nextId),"op":"join","channel":"c\#(index % 50)"}"#.utf8)))
        }
        try bed.pump(until: {
            members.allSatisfy { $0.closedWith != nil || $0.replies[2] != nil }
        }, timeout: 60, what: "every join of the burst answered, or the node fenced")
        let took = Date().timeIntervalSince(loggedInAt)
        // A node silent through the burst is declared dead within nodeTimeoutSeconds and a
        // reaper tick of its last beat, and fences itself at its next beat: the loop turns
        // through that window after the last answer (ending early once the node fenced).
        let answeredAt = Date()
        try bed.pump(until: {
            members.contains { $0.closedWith != nil } || Date().timeIntervalSince(answeredAt) > 1.5
        }, what: "the window in which a silent node would have been declared dead")

        let fenced = members.filter { $0.closedWith != nil }.count
        let answers = members.compactMap { $0.replies[2] }
        let ok = answers.filter { $0["ok"]?.boolValue == true }.count
        let unavailable = answers.filter {
            $0["error"]?.string("code") == "UNAVAILABLE" && $0["error"]?["retryAfterMs"]?.numberValue != nil
        }.count
        let summary = "\(ok) ok, \(unavailable) UNAVAILABLE of \(count) joins, \(fenced) sessions closed, in \(String(format: "%.2f", took)) s, slowest beat \(bed.links[0].heartbeat.slowestBeatMs) ms"
        print("burst: \(summary)")
        #expect(fenced == 0, "the node was declared dead and closed its connections: \(summary)")
        #expect(bed.links[0].commandLinkLosses == 0, "the node's command link went down: \(summary)")
        // Its heartbeat never waited long behind the burst (before: up to the watchdog's 0.75 s, then failed).
        #expect(bed.links[0].heartbeat.slowestBeatMs < 400, "a beat waited \(bed.links[0].heartbeat.slowestBeatMs) ms: \(summary)")
        #expect(ok + unavailable == count, "every reply ok or UNAVAILABLE with retryAfterMs: \(summary)")
        #expect(ok > 0, "\(summary)")
        #expect((try bed.redis.command(["SCARD", "burst:{0}ns:n1"])) == ":\(count)", "n1's sessions handed over: \(summary)")
    }

    /// Logs `count` users in on node `node`, a batch at a time, each waiting for its replies.
    private func logIn(_ count: Int, on node: Int, of bed: ClusterBed) throws -> [ClusterBed.Client] {
        var clients: [ClusterBed.Client] = []
        while clients.count < count {
            let batch = (clients.count..<min(count, clients.count + 500)).map { index in
                let client = bed.open(on: node)
                client.nextId = 1
                bed.feed(node, .received(client.connection, Array(#"{"id":1,"op":"login","userId":"u\#(index)"}"#.utf8)))
                return client
            }
            try bed.pump(until: { batch.allSatisfy { $0.replies[1] != nil } }, timeout: 30, what: "a batch of logins")
            let failed = batch.filter { $0.replies[1]?["ok"]?.boolValue != true }
            guard failed.isEmpty else { throw TestSupportError("\(failed.count) logins of a batch failed") }
            clients += batch
        }
        return clients
    }
}
