import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Chaos seed 259501739484377 (issue 29): a session's hold ran out on its node while Redis was
/// stopped, so the node's `session.end` failed and waited for the next reaper tick. Redis back,
/// the client resumed the session on that same node first (its record was still held by the
/// node: only held sessions with no node are reaped); then the end was sent again and ended
/// the resumed session in Redis. The node kept it live: every join answered `UNAVAILABLE`
/// (fenced), the user `offline` and listed nowhere, for good. `session.end` now carries the
/// resume token's hash the node knew, and a session resumed since (new token) is `moved`.
@Suite("Cluster: an end sent again after a resume leaves the resumed session alone")
struct ClusterLateEndTests {
    private static func runs(_ script: String, _ commands: [StoreCommand]) -> Bool {
        commands.contains(where: { if case .script(let called, _) = $0 { called.name == script } else { false } })
    }

    @Test("the hold runs out while session.end cannot reach Redis, the client resumes on the same node, then the end is retried")
    func aLateEndDoesNotEndTheResumedSession() throws {
        var configuration = Configuration()
        configuration.presence.timeoutSeconds = 0.3
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "lateend:")
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        let record = "lateend:{0}s:\(alice.sessionId)"

        // Redis out of reach for the end only: the hold runs, the end of the hold fails.
        var endsDropped = 0
        var holdingEnds = true
        bed.dropsStoreCall = { node, commands in
            guard holdingEnds, node == 0, Self.runs("session.end", commands) else { return false }
            endsDropped += 1
            return true
        }
        bed.disconnect(alice, abnormally: true)
        try bed.pump(until: { endsDropped > 0 }, what: "the end of alice's hold on n1")
        #expect(try bed.redis.command(["HGET", record, "node"]) == "$2", "the record is still held by n1 (not reaped)")

        // The client resumes on the same node before the end is sent again.
        let again = bed.open(on: 0)
        let resume = try bed.request(again, "login", ["userId": .string("alice"), "resumeToken": .string(alice.resumeToken)])
        #expect(resume["result"]?["resumed"]?.boolValue == true, "\(resume.compactString)")

        // Redis reachable again: the end is retried at the next tick.
        var endsSent = 0
        bed.beforeStoreCall = { node, commands in
            if node == 0, Self.runs("session.end", commands) { endsSent += 1 }
        }
        holdingEnds = false
        try bed.pump(until: { endsSent > 0 }, what: "the end sent again")
        // A request on the same link runs after it in Redis.
        let join = try bed.request(again, "join", ["channel": .string("other")])

        #expect(join["ok"]?.boolValue == true, "before: UNAVAILABLE (fenced), the session gone in Redis: \(join.compactString)")
        #expect(try bed.redis.command(["EXISTS", record]) == ":1", "the resumed session is still in Redis")
        #expect(try bed.redis.command(["HEXISTS", "lateend:{0}c:m:4:room:st", "alice"]) == ":1", "alice is still in room")
        let status = try bed.request(again, "getUserStatus", ["userIds": .array([.string("alice")])])
        #expect(status.compactString.contains("\"status\":\"online\""), "\(status.compactString)")
    }
}
