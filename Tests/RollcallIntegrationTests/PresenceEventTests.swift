import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Presence event types through the real binary: fields and seq, timeout after an abrupt
/// drop, truncated snapshots, interval mode and the way back.
@Suite("Presence events", .serialized)
struct PresenceEventTests {
    @Test("join, stateChanged, leave: every member, seq steps by one, timestamps from the broker clock", arguments: Topology.allCases)
    func eventFields(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try alice.join("lobby", stream: true).ok)
        let snapshot = try alice.presenceEvent("snapshot", channel: "lobby")
        let base = try #require(snapshot["seq"]?.numberValue?.intValue)
        #expect(snapshot["publisher"] == nil)
        #expect(snapshot["occupancy"]?.numberValue?.intValue == 1)
        #expect(snapshot["mode"]?.stringValue == "announce")

        let before = Int(Date().timeIntervalSince1970 * 1000)
        #expect(try bob.join("lobby", stream: true, state: ["k": "v"]).ok)
        #expect(try bob.channelOp("setState", "lobby", stream: true, ["state": ["k": "w"]]).ok)
        #expect(try bob.channelOp("leave", "lobby", stream: true).ok)
        let events = try [("join", 2), ("stateChanged", 2), ("leave", 1)].map { type, occupancy in
            let event = try alice.presenceEvent(type, channel: "lobby")
            #expect(event["occupancy"]?.numberValue?.intValue == occupancy, "\(event)")
            return event
        }
        for (offset, event) in events.enumerated() {
            #expect(event.name == "presence")
            #expect(event["channelType"]?.stringValue == "stream")
            #expect(event["publisher"]?.stringValue == "bob")
            #expect(event["mode"]?.stringValue == "announce")
            #expect(event["seq"]?.numberValue?.intValue == base + offset + 1)
            let timestamp = try #require(event["timestamp"]?.numberValue?.intValue)
            #expect(abs(timestamp - before) < 60_000)
            #expect(event["id"] == nil)
        }
        #expect(events[0]["state"] == ["k": "v"])
        #expect(events[1]["state"] == ["k": "w"])
        #expect(events[2]["state"] == nil)
    }

    @Test("timeout: an abrupt drop is held for presence.timeoutSeconds, then timeout reaches the others", arguments: Topology.allCases)
    func timeoutAfterDrop(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["timeoutSeconds": 1]])
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby", state: ["k": "v"]).ok)
        _ = try alice.presenceEvent("snapshot", channel: "lobby")
        _ = try alice.presenceEvent("join", channel: "lobby", publisher: "bob")

        bob.drop()
        #expect(try bob.waitForClose(timeout: presenceDeadline).dropped)
        // While held bob is still a member (the hold is 1 s; the reply comes well before).
        let event = try alice.presenceEvent("timeout", channel: "lobby", publisher: "bob", timeout: .seconds(15))
        #expect(event["occupancy"]?.numberValue?.intValue == 1)
        #expect(event["state"] == nil)
        #expect(event["mode"]?.stringValue == "announce")
        #expect(try alice.presenceEventsAfterBarrier().isEmpty, "no leave besides the timeout")
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"]).errorCode == .userNotPresent)
        #expect(try alice.request("getUserChannels", ["userId": "bob"])["totalChannel"]?.numberValue?.intValue == 0)
    }

    @Test("a close frame or logout sends leave at once, not timeout", arguments: Topology.allCases)
    func closeSendsLeave(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["timeoutSeconds": 60]])
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        let carol = try broker.session("carol")
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby").ok)
        #expect(try carol.join("lobby").ok)
        bob.close()
        #expect(try alice.presenceEvent("leave", channel: "lobby", publisher: "bob")["occupancy"]?.numberValue?.intValue == 2)
        #expect(try carol.request("logout").ok)
        #expect(try alice.presenceEvent("leave", channel: "lobby", publisher: "carol")["occupancy"]?.numberValue?.intValue == 1)
    }

    @Test("snapshot above presence.snapshotMaxMembers: first page, truncated, nextPage continues with getOnlineUsers", arguments: Topology.allCases)
    func truncatedSnapshot(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["snapshotMaxMembers": 2]])
        var members: [RollcallConnection] = []
        for name in ["carol", "alice", "bob"] {
            let connection = try broker.session(name)
            #expect(try connection.join("hall", presence: false, state: ["n": name]).ok)
            members.append(connection)
        }
        let dave = try broker.session("dave")
        #expect(try dave.join("hall").ok)
        let snapshot = try dave.presenceEvent("snapshot", channel: "hall")
        #expect(snapshot["snapshot"] == [["userId": "alice", "state": ["n": "alice"]], ["userId": "bob", "state": ["n": "bob"]]])
        #expect(snapshot["truncated"]?.boolValue == true)
        #expect(snapshot["occupancy"]?.numberValue?.intValue == 4)
        let nextPage = try #require(snapshot["nextPage"]?.stringValue)
        let rest = try dave.channelOp("getOnlineUsers", "hall", ["includeState": true, "page": .string(nextPage)])
        #expect(rest["users"] == [["userId": "carol", "state": ["n": "carol"]], ["userId": "dave", "state": [:]]])
        #expect(rest["nextPage"] == .null)

        // At the limit: not truncated.
        #expect(try members[0].channelOp("leave", "hall").ok)
        #expect(try members[1].channelOp("leave", "hall").ok)
        #expect(try dave.join("hall").ok)
        let whole = try dave.presenceEvent("snapshot", channel: "hall")
        #expect(whole["snapshot"]?.arrayValue?.count == 2)
        #expect(whole["truncated"] == nil)
        #expect(whole["nextPage"] == nil)
    }

    @Test("interval mode above maxInstantEvents; net changes per interval; back to announce at maxInstantEvents - hysteresis", arguments: Topology.allCases)
    func intervalMode(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["maxInstantEvents": 3, "hysteresis": 1, "intervalSeconds": 0.2]])
        let alice = try broker.session("alice")
        #expect(try alice.join("stage").ok)
        var roster = Roster(channel: "stage", me: "alice")
        roster.apply(try alice.presenceEvent("snapshot", channel: "stage").object)
        var others: [String: RollcallConnection] = [:]
        for name in ["bob", "carol"] {
            let connection = try broker.session(name)
            #expect(try connection.join("stage", presence: false).ok)
            others[name] = connection
            let joined = try alice.presenceEvent("join", channel: "stage", publisher: name)
            #expect(joined["mode"]?.stringValue == "announce")
            roster.apply(joined.object)
        }

        // The fourth member switches the channel to interval mode.
        let dave = try broker.session("dave")
        let daveJoin = try dave.join("stage", state: ["seat": "D4"])
        #expect(daveJoin["occupancy"]?.numberValue?.intValue == 4)
        #expect(daveJoin["mode"]?.stringValue == "interval")
        let erin = try broker.session("erin")
        #expect(try erin.join("stage", presence: false).ok)
        #expect(try others["bob"]!.channelOp("setState", "stage", ["state": ["hand": "up"]]).ok)

        var intervals: [Event] = []
        // Joins of dave and erin and bob's state: one or more interval events (timing), never join events.
        var nonInterval: [Event] = []
        let switched = eventually(timeout: 10) {
            for event in alice.drainEvents() where event.name == "presence" {
                roster.apply(event.object)
                if event.type == "interval" { intervals.append(event) } else { nonInterval.append(event) }
            }
            return roster.members?.keys.sorted() == ["alice", "bob", "carol", "dave", "erin"]
                && roster.members?["bob"] == ["hand": "up"]
        }
        #expect(switched, "\(roster)")
        #expect(nonInterval.isEmpty, "only interval events in interval mode: \(nonInterval)")
        let first = try #require(intervals.first)
        #expect(first["mode"]?.stringValue == "interval")
        #expect(first["publisher"] == nil)
        #expect(first["interval"]?["join"]?.arrayValue?.first == "dave")
        #expect(first["interval"]?["stateChanged"]?.arrayValue?.contains(["userId": "dave", "state": ["seat": "D4"]]) == true,
                "a joiner with state is in stateChanged too: \(first)")
        // dave receives interval events about himself too.
        #expect(try dave.presenceEvent("interval", channel: "stage")["interval"] != nil)

        // Leaves: occupancy 5 → 4 → 3 stays interval; 2 (= 3 - 1) flushes and returns to announce.
        #expect(try erin.channelOp("leave", "stage").ok)
        #expect(try dave.channelOp("leave", "stage").ok)
        let carolLeave = try others["carol"]!.channelOp("leave", "stage")
        #expect(carolLeave.ok)
        var lastInterval: Event?
        let back = eventually(timeout: 10) {
            for event in alice.drainEvents() where event.name == "presence" {
                roster.apply(event.object)
                if event.type != "interval" { nonInterval.append(event) }
                lastInterval = event
            }
            return roster.members?.keys.sorted() == ["alice", "bob"]
        }
        #expect(back, "\(roster)")
        #expect(nonInterval.isEmpty, "only interval events until the switch back: \(nonInterval)")
        #expect(lastInterval?["mode"]?.stringValue == "interval", "the switching change comes in interval mode")
        #expect(lastInterval?["occupancy"]?.numberValue?.intValue == 2)
        #expect(lastInterval?["interval"]?["leave"]?.arrayValue?.contains("carol") == true)

        // Now announce again.
        #expect(try others["bob"]!.channelOp("setState", "stage", ["state": ["hand": "down"]]).ok)
        let announced = try alice.presenceEvent("stateChanged", channel: "stage", publisher: "bob")
        #expect(announced["mode"]?.stringValue == "announce")
        #expect(announced["seq"]?.numberValue?.intValue == (lastInterval?["seq"]?.numberValue?.intValue ?? -1) + 1)
        #expect(roster.faults.isEmpty, "\(roster.faults)")
    }

    @Test("an interval event carries the net change: join then leave inside one interval is not listed", arguments: Topology.allCases)
    func intervalNetChange(topology: Topology) throws {
        // A long interval so that both changes surely fall inside the same one.
        let broker = try topology.start(config: ["presence": ["maxInstantEvents": 1, "hysteresis": 0, "intervalSeconds": 2]])
        let alice = try broker.session("alice")
        #expect(try alice.join("stage").ok)
        let bob = try broker.session("bob")
        let carol = try broker.session("carol")
        #expect(try bob.join("stage").ok) // occupancy 2 > 1: interval; bob's join is pending
        #expect(try carol.join("stage").ok)
        #expect(try carol.channelOp("leave", "stage").ok)
        let event = try alice.presenceEvent("interval", channel: "stage", timeout: .seconds(15))
        #expect(event["interval"] == ["join": ["bob"], "leave": [], "timeout": [], "stateChanged": []])
        #expect(event["occupancy"]?.numberValue?.intValue == 2)
    }
}
