import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 2: a session's end in a cluster is `session.end`, then its channels, then the
/// user's record. When the link dropped after `session.end` answered, the failed `leave` was
/// dropped, while the retried `status.ended` took the session off `P ending`, the reaper's
/// safety net: the member stayed listed everywhere, for good. Now the channels and the record
/// go in one store call, retried as a whole (each step is idempotent) until Redis answers.
@Suite("Cluster: a session's end survives a dropped link")
struct ClusterEndRetryTests {
    @Test("the leave that failed after session.end answered is retried: the member is gone everywhere and the user offline")
    func theLeaveIsRetried() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "endretry:")
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": .string("room")])["ok"]?.boolValue == true)

        var dropped = 0
        bed.dropsStoreCall = { node, commands in
            let leaves = commands.contains { if case .script(let script, _) = $0 { script.name == "presence.leave" } else { false } }
            guard node == 0, leaves, dropped == 0 else { return false }
            dropped += 1
            return true
        }
        bed.disconnect(alice, abnormally: false)

        try bed.pump(until: {
            bob.events.contains { $0.string("event") == "presence" && $0.string("type") == "leave" && $0.string("publisher") == "alice" }
        }, timeout: 5, what: "bob hears alice leave once the dropped leave is retried")
        #expect(dropped == 1, "the test dropped the leave once")
        let listing = try bed.request(bob, "getOnlineUsers", ["channel": .string("room")])
        let users = listing["result"]?["users"]?.arrayValue?.compactMap { $0.string("userId") } ?? []
        #expect(users == ["bob"], "\(listing.compactString)")
        let status = try bed.request(bob, "getUserStatus", ["userIds": .array([.string("alice")])])
        #expect(status["result"]?["statuses"]?.arrayValue?.first?.string("status") == "offline", "\(status.compactString)")
    }
}
