import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Chaos seed 160869807152804 on a Redis Cluster (session 45): a claim was lost in a failover
/// after its `adopted` went out, so Redis kept the session held by the node it left, which had
/// forgotten it. Only a held session with no node was the reaper's to time out, and that one's
/// node would never end it: its user stayed listed for good. Now the reaper also times out a
/// held session whose node let its hold end more than a node timeout ago.
@Suite("Cluster: a hold its node forgot", .serialized)
struct ClusterForgottenHoldTests {
    @Test("a held session its node no longer has times out a node timeout after its hold ended")
    func aForgottenHoldTimesOut() throws {
        let prefix = "forgotten:"
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: prefix)
        let watcher = try bed.login("watcher", on: 1)
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        let alice = try bed.login("alice", on: 0, ["presenceTimeout": .int(5)])
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        try bed.holdInRedis(alice)
        // n1 forgets the session without a word to Redis, as when another node's `adopted`
        // reached it for a claim Redis then lost.
        #expect(try bed.redis.command(["PUBLISH", prefix + "{n:n1}n", "\"adopted \(alice.sessionId)\""]) == ":1")
        try bed.pump(until: { bed.brokers[0].directory.session(id: alice.sessionId) == nil }, what: "n1 forgot alice's session")
        let record = prefix + "{0}s:" + alice.sessionId
        #expect(try bed.redis.command(["HGET", record, "node"]) == "$2", "Redis still has it held by n1")

        let began = Date()
        try bed.pump(until: { (try? bed.redis.command(["EXISTS", record])) == ":0" }, timeout: 12,
                     what: "the reaper timed out the hold n1 forgot")
        let took = Date().timeIntervalSince(began)
        #expect(took < 8, "within the 5 s hold plus the 1 s node timeout and a reaper round: \(took) s")
        try bed.pump(until: {
            watcher.events.contains { $0.string("event") == "presence" && $0.string("type") == "timeout" && $0.string("publisher") == "alice" }
        }, what: "the watcher saw alice time out")
    }
}
