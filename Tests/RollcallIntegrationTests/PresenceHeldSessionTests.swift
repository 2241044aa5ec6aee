import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Held sessions and listings under churn through the real binary.
@Suite("Presence held sessions and listings", .serialized)
struct PresenceHeldSessionTests {
    @Test("a held session keeps its user a member, gets no messages, and times out as the user's last session", arguments: Topology.singleAndCluster)
    func heldSessionIsLastSession(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["timeoutSeconds": 1]])
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let phone = try broker.session("alice")
        let laptop = try broker.session("alice")
        #expect(try phone.join("lobby", state: ["on": "phone"]).ok)
        #expect(try laptop.join("lobby").ok)
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")

        // The laptop leaves while the phone is live: nothing. Then the phone drops: held.
        #expect(try laptop.channelOp("leave", "lobby").ok)
        phone.drop()
        #expect(try phone.waitForClose(timeout: presenceDeadline).dropped)
        #expect(eventually(timeout: 10) { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 })
        let event = try bob.presenceEvent("timeout", channel: "lobby", publisher: "alice", timeout: .seconds(15))
        #expect(event["occupancy"]?.numberValue?.intValue == 1)
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "one timeout, no leave: \(event)")
    }

    @Test("a held member counts in occupancy but not in recipients; after resume it gets the kept message and events again", arguments: Topology.singleAndCluster)
    func heldMemberAndResume(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["timeoutSeconds": 60]])
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        let first = try broker.connect()
        let token = try #require(try first.login(userId: "alice")["resumeToken"]?.stringValue)
        #expect(try first.join("lobby").ok)
        first.drop()
        #expect(eventually(timeout: 10) { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 })

        let published = try bob.channelOp("publish", "lobby", ["message": "while away"])
        #expect(published["recipients"]?.numberValue?.intValue == 0, "held sessions are not recipients")
        #expect(try bob.channelOp("getOnlineUsers", "lobby")["totalOccupancy"]?.numberValue?.intValue == 2)

        let second = try broker.connect()
        #expect(try second.login(userId: "alice", resumeToken: token)["resumed"]?.boolValue == true)
        _ = try second.presenceEvent("snapshot", channel: "lobby")
        // PROTOCOL 1.1 §5: the message sent during the hold is kept and delivered at the resume.
        let kept = try second.eventsAfterBarrier().filter { $0.name == "message" }
        #expect(kept.map { $0["message"] } == ["while away"])
        #expect(try bob.channelOp("setState", "lobby", ["state": ["k": "v"]]).ok)
        #expect(try second.presenceEvent("stateChanged", channel: "lobby", publisher: "bob")["state"] == ["k": "v"])
        #expect(try bob.channelOp("publish", "lobby", ["message": "welcome back"])["recipients"]?.numberValue?.intValue == 1)
        #expect(try second.messageEvent(channel: "lobby")["message"] == "welcome back")
    }

    @Test("interval mode: a hold that expires is listed under timeout", arguments: Topology.singleAndCluster)
    func intervalTimeout(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": [
            "timeoutSeconds": 1, "maxInstantEvents": 1, "hysteresis": 0, "intervalSeconds": 0.2,
        ]])
        let alice = try broker.session("alice")
        #expect(try alice.join("stage").ok)
        let bob = try broker.session("bob")
        let carol = try broker.session("carol")
        #expect(try bob.join("stage", presence: false).ok)
        #expect(try carol.join("stage", presence: false).ok)
        let joined = try alice.presenceEvent("interval", channel: "stage")
        #expect(joined["interval"]?["join"]?.arrayValue?.contains("bob") == true)
        carol.drop()
        let ok = eventually(timeout: 15) {
            alice.drainEvents().contains { $0.type == "interval" && $0["interval"]?["timeout"] == ["carol"] }
        }
        #expect(ok, "an interval event lists carol under timeout")
        #expect(try alice.channelOp("getOnlineUsers", "stage")["users"] == [["userId": "alice"], ["userId": "bob"]])
    }

    @Test("getOnlineUsers paging while others join and leave: users present for the whole scan appear exactly once", arguments: Topology.singleAndCluster)
    func pagingUnderChurn(topology: Topology) throws {
        let broker = try topology.start()
        var stayers: [RollcallConnection] = []
        for name in ["b", "d", "f", "h", "j"] {
            let connection = try broker.session(name)
            #expect(try connection.join("hall", presence: false).ok)
            stayers.append(connection)
        }
        var churn: [String: RollcallConnection] = [:]
        for name in ["a", "c", "e"] {
            let connection = try broker.session(name)
            #expect(try connection.join("hall", presence: false).ok)
            churn[name] = connection
        }
        let reader = try broker.session("reader")
        var seen: [String] = []
        var page: String?
        var round = 0
        repeat {
            var more: JSONObject = ["pageSize": 2]
            if let page { more["page"] = .string(page) }
            let reply = try reader.channelOp("getOnlineUsers", "hall", more)
            seen += (reply["users"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue }
            page = reply["nextPage"]?.stringValue
            // Between pages: someone before the cursor leaves, someone new joins on both sides.
            round += 1
            if round == 1 {
                #expect(try churn["a"]!.channelOp("leave", "hall").ok)
                let late = try broker.session("g")
                #expect(try late.join("hall", presence: false).ok)
                churn["g"] = late
                #expect(try churn["e"]!.channelOp("leave", "hall").ok)
            }
        } while page != nil && round < 20
        for stayer in ["b", "d", "f", "h", "j"] {
            #expect(seen.filter { $0 == stayer }.count == 1, "\(stayer) in \(seen)")
        }
        #expect(seen == seen.sorted(), "byte order across pages: \(seen)")
        #expect(Set(seen).count == seen.count, "no duplicates: \(seen)")
    }
}
