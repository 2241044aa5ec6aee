import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// Generous deadline for anything the broker should do "at once" (the machine is shared).
let presenceDeadline: Duration = .seconds(10)

/// A string map from a JSON object of strings (`state`), nil when it is not one.
func stringMap(_ value: JSON?) -> [String: String]? {
    guard let object = value?.objectValue else { return nil }
    var map: [String: String] = [:]
    for member in object.members {
        guard let string = member.value.stringValue else { return nil }
        map[member.key] = string
    }
    return map
}

/// A string map as a JSON object.
func stateJSON(_ map: [String: String]) -> JSON {
    .object(JSONObject(map.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }))
}

extension RollcallConnection {
    /// `join` with the given arguments (nil ones omitted); returns the reply.
    func join(_ channel: String, stream: Bool = false, presence: Bool? = nil, messages: Bool? = nil,
              state: [String: String]? = nil) throws -> Reply {
        var args = JSONObject([("channel", .string(channel))])
        if stream { args["channelType"] = "stream" }
        if let presence { args["presence"] = .bool(presence) }
        if let messages { args["messages"] = .bool(messages) }
        if let state { args["state"] = stateJSON(state) }
        return try request("join", .object(args), timeout: presenceDeadline)
    }

    /// `op` on `channel` with more arguments; returns the reply.
    func channelOp(_ op: String, _ channel: String, stream: Bool = false, _ more: JSONObject = [:]) throws -> Reply {
        var args = JSONObject([("channel", .string(channel))])
        if stream { args["channelType"] = "stream" }
        args.members.append(contentsOf: more.members)
        return try request(op, .object(args), timeout: presenceDeadline)
    }

    /// Waits for the next presence event of `type` in `channel` (about `publisher` when given);
    /// events that do not match stay queued.
    func presenceEvent(_ type: String, channel: String, publisher: String? = nil,
                       timeout: Duration = presenceDeadline) throws -> Event {
        try waitForEvent(timeout: timeout) { event in
            event.name == "presence" && event.type == type && event["channel"]?.stringValue == channel
                && (publisher == nil || event["publisher"]?.stringValue == publisher)
        }
    }

    /// Waits for the next `message` event in `channel`.
    func messageEvent(channel: String, timeout: Duration = presenceDeadline) throws -> Event {
        try waitForEvent(timeout: timeout) { $0.name == "message" && $0["channel"]?.stringValue == channel }
    }

    /// Every user of `getOnlineUsers` with state, following `nextPage` in pages of `pageSize`.
    func onlineUsers(_ channel: String, stream: Bool = false, pageSize: Int = 100) throws -> [String: [String: String]] {
        var users: [String: [String: String]] = [:]
        var page: String?
        repeat {
            var more: JSONObject = ["includeState": true, "pageSize": .int(pageSize)]
            if let page { more["page"] = .string(page) }
            let reply = try channelOp("getOnlineUsers", channel, stream: stream, more)
            guard reply.ok else { throw HarnessError("getOnlineUsers failed: \(reply)") }
            for user in reply["users"]?.arrayValue ?? [] {
                users[user["userId"]?.stringValue ?? "?"] = stringMap(user["state"]) ?? [:]
            }
            page = reply["nextPage"]?.stringValue
        } while page != nil
        return users
    }
}

/// The roster a client keeps for one channel from its snapshot, the presence events and the
/// replies to its own state changes, in arrival order (docs/protocol.md §9.3).
struct Roster: CustomStringConvertible {
    let channel: String
    let me: String
    /// Member user → state; nil until the first snapshot.
    private(set) var members: [String: [String: String]]?
    /// The last `seq` seen (snapshot or event).
    private(set) var seq: Int?
    /// Problems seen while applying (seq going backwards, malformed events).
    private(set) var faults: [String] = []

    init(channel: String, me: String) {
        self.channel = channel
        self.me = me
    }

    /// Forgets the roster (the session left the channel).
    mutating func reset() {
        members = nil
        seq = nil
    }

    /// Applies one presence event of this channel; ignores anything else.
    mutating func apply(_ event: JSONObject) {
        let json = JSON.object(event)
        guard json["event"]?.stringValue == "presence", json["channel"]?.stringValue == channel else { return }
        let type = json["type"]?.stringValue ?? "?"
        let eventSeq = json["seq"]?.numberValue?.intValue
        if type == "snapshot" {
            var fresh: [String: [String: String]] = [:]
            for entry in json["snapshot"]?.arrayValue ?? [] {
                fresh[entry["userId"]?.stringValue ?? "?"] = stringMap(entry["state"]) ?? [:]
            }
            if json["truncated"]?.boolValue == true { faults.append("unexpected truncated snapshot") }
            members = fresh
            seq = eventSeq
            return
        }
        guard members != nil else { return } // events before the first snapshot (not joined)
        if let eventSeq, let seq, eventSeq <= seq { faults.append("seq \(eventSeq) after \(seq) (\(type))") }
        seq = eventSeq
        let publisher = json["publisher"]?.stringValue ?? "?"
        switch type {
        case "join", "stateChanged":
            members?[publisher] = stringMap(json["state"]) ?? [:]
        case "leave", "timeout":
            members?[publisher] = nil
        case "interval":
            let change = json["interval"]
            for user in change?["join"]?.arrayValue ?? [] { members?[user.stringValue ?? "?"] = [:] }
            for user in change?["leave"]?.arrayValue ?? [] { members?[user.stringValue ?? "?"] = nil }
            for user in change?["timeout"]?.arrayValue ?? [] { members?[user.stringValue ?? "?"] = nil }
            for entry in change?["stateChanged"]?.arrayValue ?? [] {
                members?[entry["userId"]?.stringValue ?? "?"] = stringMap(entry["state"]) ?? [:]
            }
        default:
            faults.append("unknown presence type \(type)")
        }
    }

    /// Applies the reply to this client's own `setState`/`removeState` (own changes are not
    /// announced to the user's own sessions in announce mode).
    mutating func applyOwnState(_ state: [String: String]) {
        guard members != nil else { return }
        members?[me] = state
    }

    var description: String { "\(me)@\(channel): \(members.map { "\($0.sorted { $0.key < $1.key })" } ?? "nil")" }
}

extension RollcallConnection {
    /// The events queued now that the broker sent before answering a `ping`: everything a
    /// request answered earlier caused for this connection has arrived (one connection's
    /// frames are ordered). Removes them from the queue.
    func eventsAfterBarrier() throws -> [Event] {
        let reply = try request("ping", timeout: presenceDeadline)
        guard reply.ok else { throw HarnessError("ping failed: \(reply)") }
        return drainEvents()
    }

    /// The presence events among ``eventsAfterBarrier()``.
    func presenceEventsAfterBarrier() throws -> [Event] {
        try eventsAfterBarrier().filter { $0.name == "presence" }
    }
}

/// `value` without its `seq` member (listings of PROTOCOL 1.1 carry one; see ``PresenceOpsTests``).
func withoutSeq(_ value: JSON) -> JSON {
    guard let object = value.objectValue else { return value }
    return .object(JSONObject(object.members.filter { $0.key != "seq" }))
}
