import RollcallClient
import RollcallProtocol

/// A channel's live roster, kept from the snapshot, presence events and interval lists
/// (PROTOCOL §4: applying the snapshot and then every event in order yields the roster
/// `getOnlineUsers` returns). User ids are compared byte by byte.
struct RosterModel {
    /// One change the model applied, for line-mode output and the recent-events list.
    enum Change: Equatable {
        case snapshot(members: Int)
        case joined(String, state: JSON)
        case left(String)
        case timedOut(String)
        case stateChanged(String, state: JSON)
    }

    let channel: String
    private(set) var mode = "announce"
    /// The broker's occupancy from the latest presence event.
    private(set) var occupancy = 0
    private(set) var seq: Int?
    /// `nextPage` of a truncated snapshot: the rest must be fetched with `getOnlineUsers`.
    private(set) var pendingPage: String?
    private var members: [[UInt8]: (id: String, state: JSON)] = [:]

    init(channel: String) { self.channel = channel }

    /// Members with their state, in byte order of user id.
    var roster: [(id: String, state: JSON)] {
        members.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value)
    }

    /// Applies a presence event of this channel; returns what changed (empty for other events).
    mutating func apply(_ event: Event) -> [Change] {
        guard event.name == "presence", event["channel"]?.stringValue == channel, let type = event.type else { return [] }
        if let mode = event["mode"]?.stringValue { self.mode = mode }
        if let occupancy = event["occupancy"]?.numberValue?.intValue { self.occupancy = occupancy }
        if let seq = event["seq"]?.numberValue?.intValue { self.seq = seq }
        let user = event["publisher"]?.stringValue ?? ""
        switch type {
        case "snapshot":
            members = [:]
            for member in event["snapshot"]?.arrayValue ?? [] {
                if let id = member["userId"]?.stringValue { insert(id, state: member["state"] ?? [:]) }
            }
            pendingPage = event["truncated"]?.boolValue == true ? event["nextPage"]?.stringValue : nil
            return [.snapshot(members: members.count)]
        case "join":
            insert(user, state: event["state"] ?? [:])
            return [.joined(user, state: event["state"] ?? [:])]
        case "leave":
            members[Array(user.utf8)] = nil
            return [.left(user)]
        case "timeout":
            members[Array(user.utf8)] = nil
            return [.timedOut(user)]
        case "stateChanged":
            insert(user, state: event["state"] ?? [:])
            return [.stateChanged(user, state: event["state"] ?? [:])]
        case "interval":
            return applyInterval(event["interval"])
        default:
            return []
        }
    }

    /// Interval lists in the order join → leave/timeout → stateChanged.
    private mutating func applyInterval(_ delta: JSON?) -> [Change] {
        func ids(_ key: String) -> [String] { (delta?[key]?.arrayValue ?? []).compactMap { $0.stringValue } }
        var changes: [Change] = []
        for id in ids("join") {
            if members[Array(id.utf8)] == nil { insert(id, state: [:]) }
            changes.append(.joined(id, state: [:]))
        }
        for id in ids("leave") {
            members[Array(id.utf8)] = nil
            changes.append(.left(id))
        }
        for id in ids("timeout") {
            members[Array(id.utf8)] = nil
            changes.append(.timedOut(id))
        }
        for change in delta?["stateChanged"]?.arrayValue ?? [] {
            guard let id = change["userId"]?.stringValue else { continue }
            let state = change["state"] ?? [:]
            insert(id, state: state)
            changes.append(.stateChanged(id, state: state))
        }
        return changes
    }

    /// Adds the users of one `getOnlineUsers` page (after a truncated snapshot); `next` is
    /// its `nextPage`. Users already known keep the state events gave them.
    mutating func addPage(_ users: [JSON], next: String?) {
        for user in users {
            guard let id = user["userId"]?.stringValue, members[Array(id.utf8)] == nil else { continue }
            insert(id, state: user["state"] ?? [:])
        }
        pendingPage = next
    }

    private mutating func insert(_ id: String, state: JSON) {
        members[Array(id.utf8)] = (id, state)
    }
}
