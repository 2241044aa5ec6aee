import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Chaos finding 6 (issue 29): a session whose connection ended while its node could not reach
/// Redis was never marked held there; it stayed live in Redis for good and its user listed
/// everywhere. The hold is now tried again at each reaper tick while the session is held.
@Suite("Cluster: a hold Redis did not get is tried again")
struct ClusterHoldRetryTests {
    @Test("the first hold is lost: the session is held in Redis at the next tick, then times out everywhere")
    func theHoldIsRetried() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "holdretry:")
        let watcher = try bed.login("watcher", on: 1)
        let alice = try bed.login("alice", on: 0, ["presenceTimeout": .int(5)])
        #expect(try bed.request(watcher, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        var dropped = 0
        bed.dropsStoreCall = { node, commands in
            guard node == 0, dropped == 0,
                  commands.contains(where: { if case .script(let script, _) = $0 { script.name == "session.hold" } else { false } })
            else { return false }
            dropped += 1
            return true
        }
        bed.disconnect(alice, abnormally: true)
        try bed.pump(until: { (try? bed.redis.command(["ZCARD", "holdretry:{0}held"])) == ":1" }, timeout: 3,
                     what: "the hold in Redis after the retry")
        #expect(dropped == 1)
        try bed.pump(until: {
            watcher.events.contains { $0.string("type") == "timeout" && $0.string("publisher") == "alice" }
        }, timeout: 10, what: "alice's timeout")
    }
}
