import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// Issue 29 item 14: a `leave` answered `UNAVAILABLE` during a link cut had already taken the
/// session out of the channel on its node, so its retry answered `NOT_IN_CHANNEL` while Redis
/// still listed the user. The rule (docs/protocol.md): a request answered `UNAVAILABLE` either
/// changed nothing, or its retry completes it. A leave changes the node's view only once Redis
/// answered; a retry after a lost answer finds the session gone there and answers `ok`.
@Suite("Cluster: a leave answered UNAVAILABLE is completed by its retry")
struct ClusterUnavailableLeaveTests {
    @Test("a leave answered UNAVAILABLE (never run, or run with its answer lost) is completed by its retry", arguments: [false, true])
    func theRetryCompletesTheLeave(answerLost: Bool) throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "unavail\(answerLost ? "l" : "d"):")
        let alice = try bed.login("alice", on: 0)
        let bob = try bed.login("bob", on: 1)
        #expect(try bed.request(alice, "join", ["channel": .string("room")])["ok"]?.boolValue == true)
        #expect(try bed.request(bob, "join", ["channel": .string("room")])["ok"]?.boolValue == true)

        bed.failFirstCall(running: "presence.leave", on: 0, answerLost: answerLost)
        let first = try bed.request(alice, "leave", ["channel": .string("room")])
        #expect(first["error"]?.string("code") == "UNAVAILABLE", "\(first.compactString)")
        let retry = try bed.request(alice, "leave", ["channel": .string("room")])
        #expect(retry["ok"]?.boolValue == true, "the retry completes the leave: \(retry.compactString)")
        let listing = try bed.request(bob, "getOnlineUsers", ["channel": .string("room")])
        #expect(listing["result"]?["users"]?.arrayValue?.compactMap { $0.string("userId") } == ["bob"], "\(listing.compactString)")
        let again = try bed.request(alice, "leave", ["channel": .string("room")])
        #expect(again["error"]?.string("code") == "NOT_IN_CHANNEL", "after the leave completed: \(again.compactString)")
    }
}
