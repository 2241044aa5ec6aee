import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// With more than one key group a login's catch-up is read per key group after the login's
/// own script (`status.changedSince`), while the user's inbox is already heard: a change
/// published in between reaches the session by the inbox first. The catch-up then leaves out
/// what the inbox delivered (the same version or an older one): it came twice before
/// (`UserStatusTests`' catch-up on a Redis Cluster, session 46), or, read before the change
/// and answered after it, put the older record back in front of the client.
@Suite("Cluster: a catch-up answered after the inbox brought newer")
struct ClusterCatchUpRaceTests {
    private func statusEvents(_ client: ClusterBed.Client, of user: String) -> [JSON] {
        client.events.filter { $0.string("event") == "userStatus" }
            .flatMap { $0["statuses"]?.arrayValue ?? [] }.filter { $0.string("userId") == user }
    }

    @Test("a catch-up read before a change and answered after the inbox delivered it is not sent: the client keeps the newer record")
    func aLateCatchUpDoesNotPutAnOlderRecordBack() throws {
        let (bed, _) = try ClusterBed.withClusterKeyGroups(nodes: 2, prefix: "catch:")
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "subscribeUserStatus", ["userIds": ["bob"]])["ok"]?.boolValue == true)
        bed.disconnect(alice, abnormally: false)
        // Her end recorded, and bob's change stamped a few milliseconds after it.
        try? bed.pump(until: { false }, timeout: 0.2, what: "alice's end recorded")
        // bob comes online after alice's session ended: alice's next login catches up on it.
        let bob = try bed.login("bob", on: 1)

        bed.delaysStoreReply = { node, commands in
            node == 0 && commands.contains { if case .script(let script, _) = $0 { script.name == "status.changedSince" } else { false } }
        }
        let again = try bed.login("alice", on: 0)
        // The catch-up's read ran (bob online, no custom status); its answer waits. bob sets a
        // custom status: alice's inbox brings the newer record.
        #expect(try bed.request(bob, "setCustomStatus", ["customStatus": "away"])["ok"]?.boolValue == true)
        try bed.pump(until: { statusEvents(again, of: "bob").contains { $0.string("customStatus") == "away" } },
                     what: "alice hears bob's custom status by her inbox")
        bed.delaysStoreReply = nil
        bed.releaseHeldReplies(node: 0)
        try? bed.pump(until: { false }, timeout: 1, what: "a moment for the catch-up")
        let seen = statusEvents(again, of: "bob")
        let away = try #require(seen.firstIndex { $0.string("customStatus") == "away" })
        #expect(seen.count == away + 1, "nothing of bob after the newer record, least of all the catch-up's older one: \(seen.map(\.compactString))")
        #expect(seen.last?.string("customStatus") == "away")
    }
}
