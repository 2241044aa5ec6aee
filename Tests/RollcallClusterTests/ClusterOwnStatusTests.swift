import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// `ClusterUserStatusTests`' catch-up test failed once in CI (session 45): a login heard its
/// user's inbox before it started, and the `offline` of the user's previous session, which
/// another node published after Redis had answered that end, reached the new session, telling
/// it that its own user was offline. The version the login wrote now counts as seen by the
/// session, so an older one from the inbox is not sent to it.
@Suite("Cluster: a login does not hear an older status of its own user")
struct ClusterOwnStatusTests {
    @Test("an older record of the user, published late to its inbox, does not reach the new session; a newer one does")
    func anOlderOwnRecordIsNotSent() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "ownstale:")
        let inbox = ClusterKeys(prefix: "ownstale:").inbox(of: Name(unchecked: "sam"))
        // The login's own change goes out through the inbox too; dropping n1's publish keeps
        // that echo away, so only the version check stands between the session and an older record.
        bed.dropsStoreCall = { node, commands in
            node == 0 && commands.contains { if case .command(let words) = $0 { words.count > 1 && words[1] == Array(inbox.utf8) } else { false } }
        }
        let sam = try bed.login("sam", on: 0)
        bed.dropsStoreCall = nil
        func publish(version: Int, status: String, custom: String) throws {
            let payload = Array("U\n\(version)\nsam\n\(status)\n0\n0\n0\n\n=\(custom)".utf8)
            _ = try bed.run([.command([Array("PUBLISH".utf8), Array(inbox.utf8), payload])], on: 1)
        }
        try publish(version: 0, status: "offline", custom: "stale")
        try publish(version: 1_000_000, status: "online", custom: "later")
        try bed.pump(until: { sam.events.contains { $0.string("event") == "userStatus" } }, what: "a userStatus event for sam")
        let customs = sam.events.filter { $0.string("event") == "userStatus" }
            .flatMap { $0["statuses"]?.arrayValue ?? [] }.compactMap { $0.string("customStatus") }
        #expect(customs == ["later"], "only the newer record: \(customs)")
    }
}
