import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Presence across session boundaries through the real binary: resume after a drop,
/// users with several sessions, and the §4 roster invariant in both modes.
@Suite("Presence sessions", .serialized)
struct PresenceSessionTests {
    @Test("resume: a dropped session is taken over with its channels and state, a fresh snapshot, and no event to others", arguments: Topology.singleAndCluster)
    func resumeOverTheWire(topology: Topology) throws {
        let broker = try topology.start(config: ["presence": ["timeoutSeconds": 60]])
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let first = try broker.connect()
        let login = try first.login(userId: "alice", platform: "web")
        let token = try #require(login["resumeToken"]?.stringValue)
        #expect(try first.join("lobby", state: ["role": "host"]).ok)
        #expect(try first.join("scores", stream: true, presence: false).ok)
        _ = try bob.presenceEvent("join", channel: "lobby", publisher: "alice")

        first.drop()
        #expect(try first.waitForClose(timeout: presenceDeadline).dropped)
        #expect(eventually(timeout: 10) { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 })
        // While held, alice is still a member.
        #expect(try bob.channelOp("getState", "lobby", ["userId": "alice"])["state"] == ["role": "host"])

        let second = try broker.connect()
        let resumed = try second.login(userId: "alice", platform: "web", resumeToken: token)
        #expect(resumed.ok, "\(resumed)")
        #expect(resumed["resumed"]?.boolValue == true)
        #expect(resumed["sessionId"] == login["sessionId"])
        #expect(resumed["channels"] == [["channel": "lobby", "channelType": "message"], ["channel": "scores", "channelType": "stream"]])
        let snapshot = try second.presenceEvent("snapshot", channel: "lobby")
        #expect(snapshot["snapshot"] == [["userId": "alice", "state": ["role": "host"]], ["userId": "bob", "state": [:]]])
        let events = try second.presenceEventsAfterBarrier()
        #expect(events.isEmpty, "no snapshot for the presence: false channel: \(events)")
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "the drop and the resume are invisible to bob")

        // The resumed session works as before: its leave is announced.
        #expect(try second.channelOp("leave", "lobby").ok)
        #expect(try bob.presenceEvent("leave", channel: "lobby", publisher: "alice")["occupancy"]?.numberValue?.intValue == 1)
        #expect(try second.channelOp("publish", "scores", stream: true, ["message": 1]).ok, "still a stream member")
    }

    @Test("a user with two sessions is one member; leaves only when both are gone; own sessions get no presence events", arguments: Topology.singleAndCluster)
    func multiSessionUser(topology: Topology) throws {
        let broker = try topology.start()
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        _ = try bob.presenceEvent("snapshot", channel: "lobby")
        let phone = try broker.session("alice")
        let laptop = try broker.session("alice")

        #expect(try phone.join("lobby", state: ["device": "phone"]).ok)
        #expect(try bob.presenceEvent("join", channel: "lobby", publisher: "alice")["occupancy"]?.numberValue?.intValue == 2)
        _ = try phone.presenceEvent("snapshot", channel: "lobby")
        let second = try laptop.join("lobby")
        #expect(second["occupancy"]?.numberValue?.intValue == 2, "the second session adds no occupancy")
        #expect(try bob.presenceEventsAfterBarrier().isEmpty, "no second join event")
        let laptopSnapshot = try laptop.presenceEvent("snapshot", channel: "lobby")
        #expect(laptopSnapshot["snapshot"] == [["userId": "alice", "state": ["device": "phone"]], ["userId": "bob", "state": [:]]])
        let online = try bob.channelOp("getOnlineUsers", "lobby")
        #expect(online["users"] == [["userId": "alice"], ["userId": "bob"]])

        // A state change from one session: bob hears it, the other session does not.
        #expect(try laptop.channelOp("setState", "lobby", ["state": ["device": "laptop"]]).ok)
        #expect(try bob.presenceEvent("stateChanged", channel: "lobby", publisher: "alice")["state"] == ["device": "laptop"])
        #expect(try phone.presenceEventsAfterBarrier().isEmpty, "presence events about alice skip her sessions")

        // Messages do reach the user's other session.
        #expect(try phone.channelOp("publish", "lobby", ["message": "sync"])["recipients"]?.numberValue?.intValue == 2)
        #expect(try laptop.messageEvent(channel: "lobby")["publisher"]?.stringValue == "alice")

        // One session leaving: still a member, state kept, no event.
        #expect(try phone.channelOp("leave", "lobby").ok)
        #expect(try bob.presenceEventsAfterBarrier().filter { $0.name == "presence" }.isEmpty)
        #expect(try bob.channelOp("getState", "lobby", ["userId": "alice"])["state"] == ["device": "laptop"])
        // The last one going (close frame): leave.
        laptop.close()
        let leave = try bob.presenceEvent("leave", channel: "lobby", publisher: "alice")
        #expect(leave["occupancy"]?.numberValue?.intValue == 1)
        #expect(try bob.channelOp("getState", "lobby", ["userId": "alice"]).errorCode == .userNotPresent)
    }

    enum Mode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case announce, interval
        var testDescription: String { rawValue }
        var config: [String: Any] {
            switch self {
            case .announce: ["presence": ["timeoutSeconds": 1]]
            case .interval: ["presence": ["timeoutSeconds": 1, "maxInstantEvents": 3, "hysteresis": 1, "intervalSeconds": 0.2]]
            }
        }
    }

    @Test("§4 invariant over the wire: snapshot + events (+ own replies) equal getOnlineUsers once quiet",
          arguments: Mode.allCases, Topology.singleAndCluster)
    func rosterInvariant(mode: Mode, topology: Topology) throws {
        let broker = try topology.start(config: mode.config)
        let channel = "arena"
        var clients: [RosterClient] = []
        for index in 0..<6 {
            clients.append(try RosterClient(broker: broker, userId: "u\(index)", channel: channel))
        }
        let auditor = try broker.session("auditor")
        var random = SeededGenerator(seed: mode == .announce ? 7 : 11)
        var sawInterval = false

        func checkQuiet(_ label: String) throws {
            var online: [String: [String: String]] = [:]
            let quiet = try eventually(timeout: 20) {
                online = try auditor.onlineUsers(channel, pageSize: 2)
                for index in clients.indices {
                    sawInterval = clients[index].catchUp() || sawInterval
                }
                return clients.allSatisfy { !$0.isJoined || $0.roster.members == online }
            }
            for client in clients where client.isJoined {
                #expect(client.roster.members == online, "\(label): \(client.roster) vs \(online)")
                #expect(client.roster.faults.isEmpty, "\(label): \(client.roster.faults)")
            }
            #expect(quiet, "\(label)")
        }

        for step in 0..<60 {
            let index = Int(random.next() % UInt64(clients.count))
            try clients[index].randomStep(&random)
            if step == 29 {
                try checkQuiet("after 30 steps")
                // One abrupt drop: its timeout must reach the rosters too.
                if let dropped = clients.indices.first(where: { clients[$0].isJoined && $0 != index }) {
                    clients[dropped].dropConnection()
                }
            }
        }
        try checkQuiet("after 60 steps")
        if mode == .interval { #expect(sawInterval, "the interval run did reach interval mode") }
    }
}

/// A deterministic random source (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One client of the invariant test: a connection with a transcript, the roster it rebuilds
/// from it, and what it has done.
struct RosterClient {
    let connection: RollcallConnection
    let userId: String
    let channel: String
    private(set) var roster: Roster
    private(set) var isJoined = false
    private var dropped = false
    private var consumed = 0
    private var ownStateRequests: Set<String> = []
    private var leaveRequests: Set<String> = []

    init(broker: any BrokerUnderTest, userId: String, channel: String) throws {
        connection = try broker.session(userId, recordTranscript: true)
        self.userId = userId
        self.channel = channel
        roster = Roster(channel: channel, me: userId)
    }

    /// Applies every object received since the last call, in order; returns whether an
    /// `interval` event was among them.
    mutating func catchUp() -> Bool {
        let transcript = connection.transcript
        var sawInterval = false
        while consumed < transcript.count {
            let object = transcript[consumed]
            consumed += 1
            if object["event"] != nil {
                if object["type"]?.stringValue == "interval" { sawInterval = true }
                roster.apply(object)
                continue
            }
            let reply = Reply(object)
            let key = reply.id.compactString
            if ownStateRequests.remove(key) != nil, reply.ok, reply["pending"] == nil, let state = stringMap(reply["state"]) {
                roster.applyOwnState(state)
            } else if leaveRequests.remove(key) != nil, reply.ok {
                roster.reset()
            }
        }
        return sawInterval
    }

    /// One random presence op (join, repeated join, leave, setState, removeState).
    mutating func randomStep(_ random: inout SeededGenerator) throws {
        guard !dropped else { return }
        let keys = ["k0", "k1", "k2"]
        func randomState() -> [String: String] {
            var state: [String: String] = [:]
            for key in keys where random.next() % 2 == 0 { state[key] = "v\(random.next() % 3)" }
            return state
        }
        let roll = random.next() % 100
        if !isJoined {
            let reply = try connection.join(channel, state: randomState())
            guard reply.ok else { throw HarnessError("join failed: \(reply)") }
            isJoined = true
        } else if roll < 15 {
            let id = connection.send("leave", ["channel": .string(channel)])
            leaveRequests.insert(id.compactString)
            guard try connection.waitForReply(id: id, timeout: presenceDeadline).ok else { throw HarnessError("leave failed") }
            isJoined = false
        } else if roll < 30 {
            guard try connection.join(channel, state: randomState()).ok else { throw HarnessError("rejoin failed") }
        } else if roll < 75 {
            let id = connection.send("setState", ["channel": .string(channel), "state": stateJSON(randomState())])
            ownStateRequests.insert(id.compactString)
            guard try connection.waitForReply(id: id, timeout: presenceDeadline).ok else { throw HarnessError("setState failed") }
        } else {
            let removed = keys.filter { _ in random.next() % 2 == 0 }
            let id = connection.send("removeState", ["channel": .string(channel), "keys": .array(removed.map { .string($0) })])
            ownStateRequests.insert(id.compactString)
            guard try connection.waitForReply(id: id, timeout: presenceDeadline).ok else { throw HarnessError("removeState failed") }
        }
    }

    /// Ends the connection without a close frame; the client takes no further part.
    mutating func dropConnection() {
        connection.drop()
        dropped = true
        isJoined = false
    }
}
