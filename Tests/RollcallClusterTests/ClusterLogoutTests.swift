import Foundation
import RollcallCore
import RollcallProtocol
import Testing

/// `logout` across nodes (PROTOCOL §2 and §6): the reply is the moment the logout happened.
/// Whatever the client does next, on any node, comes after the user's `loggedOut` record —
/// else a subscriber's session that ends right after could end "before" the logout, and its
/// next catch-up would list a change it had already seen.
@Suite("Cluster: logout")
struct ClusterLogoutTests {
    @Test("after the logout reply, another node reads the user loggedOut at once")
    func replyFollowsTheRecord() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "logout:")
        let alice = try bed.login("alice", on: 0)
        let carol = try bed.login("carol", on: 1)
        #expect(Self.status(of: "carol", in: try bed.request(alice, "getUserStatus", ["userIds": .array([.string("carol")])])) == "online")

        let reply = try bed.request(carol, "logout")
        #expect(reply["ok"]?.boolValue == true, "\(reply.compactString)")
        #expect(carol.closedWith == .logout, "reply, then close 1000")

        // Asked on the other node right after the reply, with no waiting: the record is there.
        let read = try bed.request(alice, "getUserStatus", ["userIds": .array([.string("carol")])])
        #expect(Self.status(of: "carol", in: read) == "loggedOut", "\(read.compactString)")
    }

    @Test("frames sent right behind a logout get no answer: the reply, then close 1000")
    func framesBehindTheLogout() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "logoutq:")
        let carol = try bed.login("carol", on: 1)
        // Logout and a ping in one burst: the ping waits behind the logout and is never run.
        carol.nextId += 1
        let logoutId = carol.nextId
        bed.feed(1, .received(carol.connection, Array(#"{"id":\#(logoutId),"op":"logout"}"#.utf8)))
        bed.feed(1, .received(carol.connection, Array(#"{"id":\#(logoutId + 1),"op":"ping"}"#.utf8)))
        try bed.pump(until: { carol.closedWith != nil }, what: "the close after logout")
        #expect(carol.replies[logoutId]?["ok"]?.boolValue == true)
        #expect(carol.replies[logoutId + 1] == nil, "nothing after the logout reply")
        #expect(carol.closedWith == .logout)
    }

    @Test("a logout while Redis does not answer: the reply still comes, and the record follows once Redis is back")
    func logoutDuringAnOutage() throws {
        var configuration = Configuration()
        configuration.userStatus.queryRate.calls = 1000 // the polling below is not under test
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "logoutx:")
        let alice = try bed.login("alice", on: 0)
        let carol = try bed.login("carol", on: 1)
        bed.redis.suspend()
        let reply = try bed.request(carol, "logout")
        bed.redis.resume()
        #expect(reply["ok"]?.boolValue == true, "the session ended on its node: \(reply.compactString)")
        #expect(carol.closedWith == .logout)

        // The reaper sends the end again once Redis answers.
        let deadline = Date().addingTimeInterval(10)
        var status: String?
        while Date() < deadline {
            status = Self.status(of: "carol", in: try bed.request(alice, "getUserStatus", ["userIds": .array([.string("carol")])]))
            if status == "loggedOut" { break }
            let asked = Date()
            try bed.pump(until: { Date().timeIntervalSince(asked) > 0.05 }, what: "the next poll")
        }
        #expect(status == "loggedOut")
    }

    /// The `status` of `user` in a `getUserStatus` reply.
    private static func status(of user: String, in reply: JSON) -> String? {
        reply["result"]?["statuses"]?.arrayValue?.first { $0.string("userId") == user }?.string("status")
    }
}
