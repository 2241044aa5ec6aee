import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// Over the wire, on one node and on a cluster: in interval mode `getOnlineUsers` lists the
/// roster as of the channel's last event (protocol.md §7.7) — changes pending for the next
/// `interval` event are not shown, a user who joins and leaves between two events is never
/// listed, the page's `seq` is that event's, and the reader's own join is shown.
@Suite("getOnlineUsers in interval mode: the roster as of the last event")
struct IntervalListingTests {
    @Test("pending changes are not listed; a join-and-leave between events never is; the reader's own join is", arguments: Topology.singleAndCluster)
    func listingAsOfTheLastEvent(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["maxInstantEvents": 2, "hysteresis": 1, "intervalSeconds": 2]])
        var members: [String: RollcallConnection] = [:]
        for user in ["u1", "u2", "u3"] {
            let connection = try broker.session(user)
            #expect(try connection.join("room", presence: false, state: ["s": "0"]).ok)
            members[user] = connection
        }
        let watcher = try broker.session("watcher")
        #expect(try watcher.join("room", presence: true).ok)
        _ = try watcher.presenceEvent("snapshot", channel: "room")
        let first = try watcher.presenceEvent("interval", channel: "room", timeout: .seconds(10))
        let observer = try broker.session("observer")
        func page(_ reader: RollcallConnection) throws -> Reply {
            try reader.channelOp("getOnlineUsers", "room", ["includeState": true, "pageSize": 1000])
        }
        func users(_ reply: Reply) -> [String: [String: String]] {
            var map: [String: [String: String]] = [:]
            for user in reply["users"]?.arrayValue ?? [] { map[user["userId"]?.stringValue ?? "?"] = stringMap(user["state"]) ?? [:] }
            return map
        }
        let atEvent = try page(observer)
        let roster: [String: [String: String]] = ["u1": ["s": "0"], "u2": ["s": "0"], "u3": ["s": "0"], "watcher": [:]]
        #expect(users(atEvent) == roster)
        #expect(atEvent["seq"] == first["seq"])

        // Changes for the next event: a join (that leaves again), a state change, a leave.
        let passer = try broker.session("u0")
        #expect(try passer.join("room", presence: false, state: ["s": "p"]).ok)
        #expect(try members["u1"]!.channelOp("setState", "room", ["state": ["s": "1"]]).ok)
        #expect(try members["u2"]!.channelOp("leave", "room").ok)
        let during = try page(observer)
        #expect(users(during) == roster, "nothing pending is listed")
        #expect(during["seq"] == first["seq"])
        #expect(during["totalOccupancy"]?.numberValue?.intValue == 4)
        let own = try page(passer)
        #expect(users(own)["u0"] == ["s": "p"], "the reader's own join is shown, as in its snapshot")
        #expect(own["totalOccupancy"]?.numberValue?.intValue == 5)
        #expect(try passer.channelOp("leave", "room").ok)

        let next = try watcher.presenceEvent("interval", channel: "room", timeout: .seconds(10))
        #expect(next["interval"]?["join"] == [], "u0 joined and left between two events")
        #expect(next["interval"]?["leave"] == ["u2"])
        let after = try page(observer)
        #expect(users(after) == ["u1": ["s": "1"], "u3": ["s": "0"], "watcher": [:]])
        #expect(after["seq"] == next["seq"])
    }
}
