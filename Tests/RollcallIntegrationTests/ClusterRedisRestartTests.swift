import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Issue 29 item 0: Redis shut down with SAVE and started again (its data kept). Every node
/// reconnects, resubscribes and resyncs (PROTOCOL §9): a join made afterwards through one node
/// reaches the members on every node. Before the fix a node whose pub/sub link came back before
/// its command link failed its resync reads and buffered every later event for good. The
/// restarted Redis has no scripts: each new link loads them before their first `EVALSHA`, so
/// none answers `NOSCRIPT` (whose `EVAL` fallback would run behind the commands queued meanwhile).
@Suite("Cluster across a Redis restart that keeps its data", .serialized)
struct ClusterRedisRestartTests {
    @Test("after SHUTDOWN SAVE and a restart, a join through node C reaches the members on nodes A and B")
    func everyNodeHearsEventsAfterARestart() throws {
        let cluster = try ClusterProcess()
        let members = try (0..<3).map { try cluster.session("member-\($0)", node: $0) }
        for (index, member) in members.enumerated() {
            #expect(try member.join("lobby").ok)
            _ = try member.presenceEvent("snapshot", channel: "lobby")
            for earlier in members[..<index] { _ = try earlier.presenceEvent("join", channel: "lobby", publisher: "member-\(index)") }
        }

        _ = try? RedisWire.command(port: cluster.redisPort, ["SHUTDOWN", "SAVE"])
        try cluster.redis.startAgainAfterShutdown()
        let healthy = eventually(timeout: 20) {
            (0..<3).allSatisfy { (try? RawHTTP.get(port: cluster.node($0).port, path: "/healthz").status) == 200 }
        }
        #expect(healthy, "\(cluster.describeNodes())")
        // Each node resynced by seq: the rosters did not change, so snapshots, if any, show all three.
        for member in members { _ = member.drainEvents() }

        var newcomer: RollcallConnection?
        #expect(eventually(timeout: 10) {
            newcomer = try? cluster.session("newcomer", node: 2)
            return newcomer != nil
        }, "a login through node C works again")
        var joined: Reply?
        #expect(eventually(timeout: 10) {
            joined = try? newcomer?.join("lobby")
            return joined?.ok == true
        }, "\(String(describing: joined))")
        let errors = (try? RedisWire.bulk(port: cluster.redisPort, ["INFO", "errorstats"])) ?? "?"
        #expect(!errors.contains("NOSCRIPT"),
                "every script was loaded on the new links before its first EVALSHA (issue 29 item 5): \(errors)")
        for (index, member) in members.enumerated() {
            // The join event, or a snapshot that lists the newcomer (a node that resynced after
            // the join shows it so: a client replaces its roster with any snapshot).
            let heard = try? member.waitForEvent(timeout: .seconds(3)) { event in
                guard event.name == "presence", event["channel"]?.stringValue == "lobby" else { return false }
                if event.type == "join" { return event["publisher"]?.stringValue == "newcomer" }
                return event.type == "snapshot"
                    && (event["snapshot"]?.arrayValue ?? []).contains { $0["userId"]?.stringValue == "newcomer" }
            }
            #expect(heard != nil, "member on node \(index) heard the join within 3 s; it got \(member.drainEvents().map { "\($0.name) \($0.type ?? "") \($0["publisher"]?.stringValue ?? "") seq \($0["seq"]?.numberValue?.intValue ?? -1)" }); join \(String(describing: joined)); nodes: \(cluster.describeNodes()); logs: \((0..<3).map { cluster.node($0).stderrText.suffix(1500) })")
        }
    }
}

/// Issue 29 item 1: after Redis lost the cluster's data, heartbeats and the reaper write
/// `P meta` (`lastBeat`, `grace`) and `P nodes` before the nodes register again; those keys
/// are the cluster's own, so the register script claims the prefix again (it answered
/// `foreign` before): a node started later joins, and a second loss is noticed like the first.
@Suite("Cluster after Redis lost its data", .serialized)
struct ClusterDataLossAgainTests {
    @Test("after a data loss a node started again joins the cluster, and a second loss closes sessions with 1012 again")
    func theClusterRegistersAgainAfterADataLoss() throws {
        let cluster = try ClusterProcess()
        let first = try cluster.session("alice", node: 0)
        try cluster.redis.restart()
        let closed = try first.waitForClose(timeout: .seconds(15))
        #expect(closed.reason == "cluster data lost", "\(closed)")
        #expect(cluster.waitUntilFormed(timeout: 10), "\(cluster.describeNodes())")
        // Let heartbeats and the reaper write their keys before the next start check.
        let settled = eventually(timeout: 10) {
            ((try? RedisWire.command(port: cluster.redisPort, ["EXISTS", cluster.keyPrefix + "{0}meta"])) ?? "") == ":1"
        }
        #expect(settled)

        try cluster.restart(node: 2)
        #expect(cluster.waitUntilFormed(timeout: 10), "the restarted node joined: \(cluster.describeNodes())")
        let second = try cluster.session("bob", node: 2)
        try cluster.redis.restart()
        let closedAgain = try second.waitForClose(timeout: .seconds(15))
        #expect(closedAgain.reason == "cluster data lost", "a second loss is noticed like the first: \(closedAgain)")
    }

    /// Chaos seed 213898214645513 on a Redis Cluster (session 43): a master lost the data, and
    /// scripts already on their way wrote keys of the cluster's layout (a token, a session
    /// record) before any node registered again; the register script called them foreign, so
    /// no node registered again and a restarted node was refused.
    @Test("a data loss followed by stale writes of the cluster's own layout: the nodes register again, and a restarted node joins")
    func staleWritesAfterADataLossAreTheClustersOwn() throws {
        let cluster = try ClusterProcess()
        let first = try cluster.session("alice", node: 0)
        let prefix = cluster.keyPrefix
        #expect(try RedisWire.command(port: cluster.redisPort, ["FLUSHALL"]) == "+OK")
        #expect(try RedisWire.command(port: cluster.redisPort, ["SET", prefix + "{0}tok:stale", "0/ghost"]) == "+OK")
        #expect(try RedisWire.command(port: cluster.redisPort, ["HSET", prefix + "{0}s:ghost", "user", "ghost"]) == ":1")
        let closed = try first.waitForClose(timeout: .seconds(15))
        #expect(closed.reason == "cluster data lost", "\(closed)")
        #expect(cluster.waitUntilFormed(timeout: 10), "every node registered again: \(cluster.describeNodes())")
        try cluster.restart(node: 2)
        #expect(cluster.waitUntilFormed(timeout: 10), "the restarted node joined: \(cluster.describeNodes())")
        let bob = try cluster.session("bob", node: 2)
        #expect(try bob.join("lobby").ok)
    }
}
