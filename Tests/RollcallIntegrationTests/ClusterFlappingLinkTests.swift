import Foundation
import Testing

/// Issue 29 item 3: a node whose Redis link comes back marked a grace window for the whole
/// cluster (`P meta grace`), which pauses dead-node detection everywhere; a node whose link
/// keeps dropping kept a dead node alive for good. PROTOCOL §9 (1.2): the grace follows an
/// outage of Redis itself; a node that reconnects alone while the others kept heartbeating
/// grants none. The nodes name their command links (`CLIENT SETNAME rollcall:<node>`), so the
/// test cuts one node's link as an operator would find it in `CLIENT LIST`.
@Suite("Cluster: one node's flapping Redis link", .serialized)
struct ClusterFlappingLinkTests {
    @Test("a dead node is declared dead on time while another node's Redis link keeps dropping")
    func aFlappingLinkDoesNotPauseDeathDetection() throws {
        let cluster = try ClusterProcess()  // heartbeatSeconds 0.2, nodeTimeoutSeconds 1
        let nodes = cluster.keyPrefix + "{0}nodes"
        #expect(try RedisWire.command(port: cluster.redisPort, ["ZSCORE", nodes, "n3"]) != "$-1")
        #expect(eventually(timeout: 5) { commandLinkId(of: "n2", port: cluster.redisPort) != nil },
                "node n2 names its command link: \((try? RedisWire.bulk(port: cluster.redisPort, ["CLIENT", "LIST"])) ?? "?")")

        cluster.kill(node: 2)
        let killedAt = Date()
        var cuts = 0
        var declaredDeadAfter: TimeInterval?
        // Cut n2's link every 0.3 s, more often than nodeTimeoutSeconds, for up to 5 s.
        while Date().timeIntervalSince(killedAt) < 5 {
            if let id = commandLinkId(of: "n2", port: cluster.redisPort),
               (try? RedisWire.command(port: cluster.redisPort, ["CLIENT", "KILL", "ID", id])) == ":1" {
                cuts += 1
            }
            let dead = eventually(timeout: 0.3) {
                (try? RedisWire.command(port: cluster.redisPort, ["ZSCORE", nodes, "n3"])) == "$-1"
            }
            if dead {
                declaredDeadAfter = Date().timeIntervalSince(killedAt)
                break
            }
        }
        #expect(cuts >= 2, "the test cut n2's link while waiting (\(cuts) cuts)")
        // nodeTimeoutSeconds (1) + heartbeatSeconds (0.2), and slack for a loaded machine.
        #expect(declaredDeadAfter.map { $0 < 3 } == true,
                "n3 declared dead \(declaredDeadAfter.map { String(format: "%.2f s", $0) } ?? "never within 5 s") after kill -9, with \(cuts) cuts of n2's link; nodes: \(cluster.describeNodes())")
        cluster.stopAll()
    }

    /// The id of `node`'s command link in `CLIENT LIST`, by the name the node gives it.
    private func commandLinkId(of node: String, port: Int) -> String? {
        guard let list = try? RedisWire.bulk(port: port, ["CLIENT", "LIST"]) else { return nil }
        for line in list.split(separator: "\n") where line.contains(" name=rollcall:\(node) ") {
            let fields = line.split(separator: " ")
            if let id = fields.first(where: { $0.hasPrefix("id=") }) { return String(id.dropFirst(3)) }
        }
        return nil
    }
}
