import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol

/// One client of the cluster roster-invariant test: a session on one node that records its
/// transcript, and the client library's ``RollcallClient/Roster`` rebuilt from it (snapshot,
/// then every presence event in order). Events about the client's own user never reach it
/// (PROTOCOL §4), so its own state is left out of comparisons.
struct ClusterRosterClient {
    let connection: RollcallConnection
    let userId: String
    let channel: String
    /// The node the session is on (0-based).
    let node: Int
    /// The roster while joined (nil before the first snapshot and after a leave).
    private(set) var roster: RollcallClient.Roster?
    private(set) var isJoined = false
    /// What looked wrong while applying: seq not growing, edits that do not fit the roster.
    private(set) var problems: [String] = []
    private var consumed = 0
    private var leaveRequests: Set<String> = []

    /// Logs in as `userId` on node `node` of `cluster`.
    init(cluster: ClusterProcess, userId: String, node: Int, channel: String) throws {
        connection = try cluster.session(userId, node: node, recordTranscript: true)
        self.userId = userId
        self.node = node
        self.channel = channel
    }

    /// The roster as user → state, with the own user's state blanked (see the type's note).
    var comparableMembers: [String: [String: String]]? {
        guard let roster else { return nil }
        var states: [String: [String: String]] = [:]
        for member in roster.sortedMembers { states[member.userId] = member.userId == userId ? [:] : member.state }
        return states
    }

    /// `getOnlineUsers` as user → state with this client's own state blanked, to compare
    /// with ``comparableMembers``.
    func comparable(_ online: [String: [String: String]]) -> [String: [String: String]] {
        var states = online
        if states[userId] != nil { states[userId] = [:] }
        return states
    }

    /// Applies every object received since the last call, in order; returns how many of them
    /// were `interval` events.
    mutating func catchUp() -> Int {
        let transcript = connection.transcript
        var intervals = 0
        while consumed < transcript.count {
            let object = transcript[consumed]
            consumed += 1
            let json = JSON.object(object)
            if json["event"] != nil {
                guard json["event"]?.stringValue == "presence", json["channel"]?.stringValue == channel else { continue }
                let type = json["type"]?.stringValue ?? "?"
                if type == "interval" { intervals += 1 }
                if type == "snapshot" { roster = RollcallClient.Roster(channel: channel) }
                guard var current = roster else {
                    problems.append("\(type) before the snapshot: \(json.compactString)")
                    continue
                }
                if type != "snapshot", let last = current.seq, let seq = json["seq"]?.numberValue?.intValue, seq <= last {
                    problems.append("seq went from \(last) to \(seq) (\(type))")
                }
                if type != "interval", type != "snapshot", json["publisher"]?.stringValue == userId {
                    problems.append("\(type) about the viewer's own user")
                }
                let me = userId
                var found: [String] = []
                current.apply(Event(object)) { change in
                    guard case .unexpected(let what) = change, what != "interval join of \(me), already a member" else { return }
                    found.append(what)
                }
                problems += found
                roster = current
                continue
            }
            let reply = Reply(object)
            if leaveRequests.remove(reply.id.compactString) != nil, reply.ok { roster = nil }
        }
        return intervals
    }

    /// One random presence op: join (or join again with a state), leave, setState, removeState.
    mutating func randomStep(_ random: inout SeededGenerator) throws {
        let keys = ["k0", "k1", "k2"]
        func randomState() -> [String: String] {
            var state: [String: String] = [:]
            for key in keys where random.next() % 2 == 0 { state[key] = "v\(random.next() % 3)" }
            return state
        }
        let roll = random.next() % 100
        if !isJoined {
            let reply = try connection.join(channel, state: randomState())
            guard reply.ok else { throw HarnessError("\(userId) on n\(node + 1): join failed: \(reply)") }
            isJoined = true
        } else if roll < 15 {
            let id = connection.send("leave", ["channel": .string(channel)])
            leaveRequests.insert(id.compactString)
            let reply = try connection.waitForReply(id: id, timeout: presenceDeadline)
            guard reply.ok else { throw HarnessError("\(userId) on n\(node + 1): leave failed: \(reply)") }
            isJoined = false
        } else if roll < 30 {
            let reply = try connection.join(channel, state: randomState())
            guard reply.ok else { throw HarnessError("\(userId) on n\(node + 1): rejoin failed: \(reply)") }
        } else if roll < 75 {
            let reply = try connection.channelOp("setState", channel, ["state": stateJSON(randomState())])
            guard reply.ok else { throw HarnessError("\(userId) on n\(node + 1): setState failed: \(reply)") }
        } else {
            let removed = keys.filter { _ in random.next() % 2 == 0 }
            let reply = try connection.channelOp("removeState", channel, ["keys": .array(removed.map { .string($0) })])
            guard reply.ok else { throw HarnessError("\(userId) on n\(node + 1): removeState failed: \(reply)") }
        }
    }
}
