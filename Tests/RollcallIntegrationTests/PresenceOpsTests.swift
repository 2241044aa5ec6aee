import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §4 ops through the real binary: join, leave, publish, setState, removeState,
/// getState, getOnlineUsers, getUserChannels.
@Suite("Presence ops", .serialized)
struct PresenceOpsTests {
    @Test("join: reply, snapshot, join event with state; presence/messages flags; repeated join is idempotent", arguments: Topology.allCases)
    func joinFlagsAndIdempotence(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")

        let first = try alice.join("lobby", state: ["role": "host"])
        #expect(first.ok, "\(first)")
        #expect(first["occupancy"]?.numberValue?.intValue == 1)
        #expect(first["mode"]?.stringValue == "announce")
        let ownSnapshot = try alice.presenceEvent("snapshot", channel: "lobby")
        #expect(ownSnapshot["snapshot"] == [["userId": "alice", "state": ["role": "host"]]])
        #expect(ownSnapshot["channelType"]?.stringValue == "message")

        // bob without presence events: no snapshot; alice sees him join.
        let bobJoin = try bob.join("lobby", presence: false, messages: true)
        #expect(bobJoin["occupancy"]?.numberValue?.intValue == 2)
        let joined = try alice.presenceEvent("join", channel: "lobby", publisher: "bob")
        #expect(joined["occupancy"]?.numberValue?.intValue == 2)
        #expect(joined["state"] == [:])
        #expect(joined["mode"]?.stringValue == "announce")
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "presence: false gets no snapshot")

        // Presence events do not reach bob while presence is false.
        #expect(try alice.channelOp("setState", "lobby", ["state": ["role": "speaker"]]).ok)
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "presence: false gets no stateChanged")

        // Joining again: same occupancy, flags updated (snapshot now), no event to alice.
        let again = try bob.join("lobby", presence: true, messages: false)
        #expect(again.ok)
        #expect(again["occupancy"]?.numberValue?.intValue == 2)
        let snapshot = try bob.presenceEvent("snapshot", channel: "lobby")
        #expect(snapshot["snapshot"] == [["userId": "alice", "state": ["role": "speaker"]], ["userId": "bob", "state": [:]]])
        #expect(try alice.presenceEventsAfterBarrier().isEmpty, "a repeated join is not a new join")

        // messages: false now: alice's publish reaches nobody.
        let published = try alice.channelOp("publish", "lobby", ["message": "hello"])
        #expect(published["recipients"]?.numberValue?.intValue == 0)
        #expect(try bob.eventsAfterBarrier().isEmpty)

        // Joining again with a state change: stateChanged to alice, not a join.
        #expect(try bob.join("lobby", state: ["mood": "happy"]).ok)
        let changed = try alice.presenceEvent("stateChanged", channel: "lobby", publisher: "bob")
        #expect(changed["state"] == ["mood": "happy"])
        #expect(changed["seq"]?.numberValue?.intValue == (joined["seq"]?.numberValue?.intValue ?? 0) + 2)
        #expect(try alice.presenceEventsAfterBarrier().isEmpty)
    }

    @Test("leave: leave event to the others, state deleted, occupancy drops; the channel is gone when empty", arguments: Topology.allCases)
    func leave(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby", state: ["seat": "A1"]).ok)
        _ = try alice.presenceEvent("join", channel: "lobby", publisher: "bob")

        let left = try bob.channelOp("leave", "lobby")
        #expect(left.ok)
        #expect(left.result == [:])
        let event = try alice.presenceEvent("leave", channel: "lobby", publisher: "bob")
        #expect(event["occupancy"]?.numberValue?.intValue == 1)
        #expect(event["state"] == nil, "leave carries no state")
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"]).errorCode == .userNotPresent)

        // Back without state: the old state is gone.
        #expect(try bob.join("lobby").ok)
        #expect(try alice.presenceEvent("join", channel: "lobby", publisher: "bob")["state"] == [:])
        #expect(try bob.channelOp("leave", "lobby").ok)
        #expect(try alice.channelOp("leave", "lobby").ok)
        let empty = try bob.channelOp("getOnlineUsers", "lobby")
        #expect(empty["totalOccupancy"]?.numberValue?.intValue == 0)
        #expect(empty["users"] == [])
    }

    @Test("publish: message channels accept anyone, stream channels need membership; separate namespaces", arguments: Topology.allCases)
    func publish(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        let carol = try broker.session("carol")
        #expect(try alice.join("lobby").ok)
        #expect(try bob.join("lobby", stream: true).ok)

        // carol is in neither channel: a message channel takes her publish.
        let message: JSON = ["kind": "chat", "text": "hi\nall", "n": [1, -2, nil, true]]
        let sent = try carol.channelOp("publish", "lobby", ["message": message])
        #expect(sent.ok, "\(sent)")
        #expect(sent["recipients"]?.numberValue?.intValue == 1)
        let received = try alice.messageEvent(channel: "lobby")
        #expect(received["publisher"]?.stringValue == "carol")
        #expect(received["message"] == message)
        #expect(received["channelType"]?.stringValue == "message")
        #expect(received["timestamp"]?.numberValue?.intValue != nil)
        #expect(received["seq"] == nil, "messages carry no seq")
        #expect(try bob.eventsAfterBarrier().filter { $0.name == "message" }.isEmpty, "stream lobby is another channel")

        // A stream channel needs membership.
        #expect(try carol.channelOp("publish", "lobby", stream: true, ["message": "x"]).errorCode == .notInChannel)
        #expect(try carol.join("lobby", stream: true, messages: false).ok)
        let streamed = try carol.channelOp("publish", "lobby", stream: true, ["message": nil])
        #expect(streamed["recipients"]?.numberValue?.intValue == 1)
        let streamEvent = try bob.messageEvent(channel: "lobby")
        #expect(streamEvent["channelType"]?.stringValue == "stream")
        #expect(streamEvent["message"] == .null)
        #expect(streamEvent["publisher"]?.stringValue == "carol")

        // The publishing session does not get its own message.
        #expect(try bob.channelOp("publish", "lobby", stream: true, ["message": 7])["recipients"]?.numberValue?.intValue == 0)
        #expect(try bob.eventsAfterBarrier().filter { $0.name == "message" }.isEmpty)
    }

    @Test("setState: merge, stateChanged with the full state, no event without a change, pending before join", arguments: Topology.allCases)
    func setState(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try alice.join("lobby").ok)
        _ = try alice.presenceEvent("snapshot", channel: "lobby")

        // Before joining: held by bob's session, applied at its join, nothing sent.
        let pending = try bob.channelOp("setState", "lobby", ["state": ["mood": "calm"]])
        #expect(pending.ok)
        #expect(pending["pending"]?.boolValue == true)
        #expect(pending["state"] == ["mood": "calm"])
        #expect(try alice.presenceEventsAfterBarrier().isEmpty)
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"]).errorCode == .userNotPresent)
        #expect(try bob.join("lobby", state: ["seat": "B2"]).ok)
        let joined = try alice.presenceEvent("join", channel: "lobby", publisher: "bob")
        #expect(joined["state"] == ["mood": "calm", "seat": "B2"])
        let snapshot = try bob.presenceEvent("snapshot", channel: "lobby")
        #expect(snapshot["snapshot"]?.arrayValue?.last == ["userId": "bob", "state": ["mood": "calm", "seat": "B2"]])

        // Merge: given keys overwrite, others stay; the event carries the full state.
        let merged = try bob.channelOp("setState", "lobby", ["state": ["mood": "busy", "device": "phone"]])
        #expect(merged["state"] == ["device": "phone", "mood": "busy", "seat": "B2"])
        #expect(merged["pending"] == nil)
        let changed = try alice.presenceEvent("stateChanged", channel: "lobby", publisher: "bob")
        #expect(changed["state"] == ["device": "phone", "mood": "busy", "seat": "B2"])
        #expect(changed["seq"]?.numberValue?.intValue == (joined["seq"]?.numberValue?.intValue ?? 0) + 1)

        // The same values again, or nothing: no event.
        #expect(try bob.channelOp("setState", "lobby", ["state": ["mood": "busy"]]).ok)
        #expect(try bob.channelOp("setState", "lobby", ["state": [:]]).ok)
        #expect(try alice.presenceEventsAfterBarrier().isEmpty)

        // getState reads it; the caller need not be a member.
        let carol = try broker.session("carol")
        let read = try carol.channelOp("getState", "lobby", ["userId": "bob"])
        #expect(read.result == ["userId": "bob", "state": ["device": "phone", "mood": "busy", "seat": "B2"]])
    }

    @Test("removeState: stateChanged with what is left; pending state can be edited before join", arguments: Topology.allCases)
    func removeState(topology: Topology) throws {
        let broker = try topology.start()
        let alice = try broker.session("alice")
        let bob = try broker.session("bob")
        #expect(try alice.join("lobby").ok)
        _ = try alice.presenceEvent("snapshot", channel: "lobby")
        #expect(try bob.join("lobby", state: ["a": "1", "b": "2", "c": "3"]).ok)
        _ = try alice.presenceEvent("join", channel: "lobby", publisher: "bob")

        let removed = try bob.channelOp("removeState", "lobby", ["keys": ["a", "c", "zzz"]])
        #expect(removed.result == ["state": ["b": "2"]])
        #expect(try alice.presenceEvent("stateChanged", channel: "lobby", publisher: "bob")["state"] == ["b": "2"])
        #expect(try bob.channelOp("removeState", "lobby", ["keys": ["nothing"]]).ok)
        #expect(try alice.presenceEventsAfterBarrier().isEmpty, "removing nothing sends nothing")
        #expect(try alice.channelOp("getState", "lobby", ["userId": "bob"])["state"] == ["b": "2"])

        // Without membership: the held state is edited; with none, an empty state.
        #expect(try bob.channelOp("removeState", "later", ["keys": ["x"]]).result == ["state": [:]])
        #expect(try bob.channelOp("setState", "later", ["state": ["x": "1", "y": "2"]])["pending"]?.boolValue == true)
        let edited = try bob.channelOp("removeState", "later", ["keys": ["x"]])
        #expect(edited.result == ["state": ["y": "2"], "pending": true])
        #expect(try bob.join("later").ok)
        #expect(try alice.channelOp("getState", "later", ["userId": "bob"])["state"] == ["y": "2"])
    }

    @Test("getOnlineUsers: byte order over several pages, includeState, includeUserId: false", arguments: Topology.allCases)
    func getOnlineUsersPaging(topology: Topology) throws {
        let broker = try topology.start()
        let names = ["zed", "Zoe", "alice", "bob", "carol", "dave", "émile"]
        var connections: [RollcallConnection] = []
        for name in names {
            let connection = try broker.session(name)
            #expect(try connection.join("hall", presence: false, state: ["name": name]).ok)
            connections.append(connection)
        }
        let reader = try broker.session("reader")
        var seen: [String] = []
        var page: String?
        var pages = 0
        repeat {
            var more: JSONObject = ["pageSize": 3, "includeState": true]
            if let page { more["page"] = .string(page) }
            let reply = try reader.channelOp("getOnlineUsers", "hall", more)
            #expect(reply.ok, "\(reply)")
            #expect(reply["totalOccupancy"]?.numberValue?.intValue == names.count)
            let users = reply["users"]?.arrayValue ?? []
            #expect(users.count <= 3)
            for user in users {
                let id = try #require(user["userId"]?.stringValue)
                #expect(user["state"] == ["name": .string(id)])
                seen.append(id)
            }
            page = reply["nextPage"]?.stringValue
            if page == nil { #expect(reply["nextPage"] == .null) }
            pages += 1
        } while page != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })

        let plain = try reader.channelOp("getOnlineUsers", "hall", ["pageSize": 2])
        #expect(plain["users"]?.arrayValue?.first == ["userId": "Zoe"], "no state unless asked")
        let countOnly = try reader.channelOp("getOnlineUsers", "hall", ["includeUserId": false])
        #expect(countOnly.result == ["totalOccupancy": 7, "seq": 7, "users": [], "nextPage": nil], "seq: seven joins (1.1)")
        let unknown = try reader.channelOp("getOnlineUsers", "nowhere")
        #expect(unknown.result == ["totalOccupancy": 0, "seq": 0, "users": [], "nextPage": nil])
        #expect(try reader.channelOp("getOnlineUsers", "hall", stream: true)["totalOccupancy"]?.numberValue?.intValue == 0)
    }

    @Test("getUserChannels: message before stream, byte order; held memberships count; gone after leave", arguments: Topology.allCases)
    func getUserChannels(topology: Topology) throws {
        let broker = try topology.start()
        let bob = try broker.session("bob")
        for (channel, stream) in [("zoo", false), ("lobby", true), ("Lobby", false), ("lobby", false)] {
            #expect(try bob.join(channel, stream: stream).ok)
        }
        let alice = try broker.session("alice")
        let reply = try alice.request("getUserChannels", ["userId": "bob"])
        #expect(reply.result == ["totalChannel": 4, "channels": [
            ["channel": "Lobby", "channelType": "message"], ["channel": "lobby", "channelType": "message"],
            ["channel": "zoo", "channelType": "message"], ["channel": "lobby", "channelType": "stream"],
        ]])
        #expect(try bob.channelOp("leave", "zoo").ok)
        #expect(try alice.request("getUserChannels", ["userId": "bob"])["totalChannel"]?.numberValue?.intValue == 3)
        #expect(try alice.request("getUserChannels", ["userId": "nobody"]).result == ["totalChannel": 0, "channels": []])
    }
}
