import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 6: deadlines were per command, not per request. `join` and `setState` read the
/// member's state, then run their script, and retry both (up to 8 times) when the state changed
/// meanwhile, so a request could wait 8 × 2 round trips. Now a request starts no round trip
/// past `nodeTimeoutSeconds` and answers `UNAVAILABLE` having changed nothing (PROTOCOL §9).
/// (Since issue 30 item 4 no read precedes the script: each attempt is one script, whose
/// `retry` carries the state Redis has.)
@Suite("Cluster: one deadline per request")
struct ClusterRequestDeadlineTests {
    @Test("a join whose state keeps changing under it on a slow Redis answers UNAVAILABLE within nodeTimeoutSeconds")
    func aContendedJoinStopsAtItsDeadline() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "deadline:")  // nodeTimeoutSeconds 1
        let alice = try bed.login("alice", on: 0)
        let stateKey = "deadline:{0}c:m:4:room:st"
        var joinScripts = 0
        // The bed holds this closure: capturing it strongly would keep the bed, and its
        // redis-server, alive after the test.
        bed.beforeStoreCall = { [unowned bed] node, commands in
            guard node == 0 else { return }
            for command in commands {
                switch command {
                case .script(let script, _) where script.name == "presence.join":
                    usleep(150_000)  // a slow round trip (fault injection, not a wait)
                    // Another node changed alice's state since the last attempt saw it: retry.
                    joinScripts += 1
                    _ = try? bed.redis.command(["HSET", stateKey, "alice", "changed-\(joinScripts)"])
                default:
                    break
                }
            }
        }
        let started = Date()
        let reply = try bed.request(alice, "join", ["channel": .string("room")])
        let took = Date().timeIntervalSince(started)
        #expect(reply["error"]?.string("code") == "UNAVAILABLE", "\(reply.compactString)")
        #expect(reply["error"]?["retryAfterMs"]?.numberValue != nil, "\(reply.compactString)")
        #expect(took < 1.4, "answered \(String(format: "%.2f", took)) s after the join, with \(joinScripts) scripts run")
        #expect(joinScripts < 8, "no new round trip past the deadline (\(joinScripts) scripts)")
    }
}
