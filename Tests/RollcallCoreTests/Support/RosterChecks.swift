import RollcallClient
import RollcallProtocol

/// The client library's `Roster` fed with the harness's events (JSON trees), plus the checks
/// these suites make of the broker's presence events on the way.
extension PresenceRoster where Storage == RosterMembers {
    /// A roster of `room`-like channels named in the event itself.
    init(of event: JSON) {
        self.init(channel: event.string("channel") ?? "", channelType: event.string("channelType") ?? "message")
    }

    /// User → state, as `onlineUsers(_:)` returns them.
    var statesByUser: [String: [String: String]] {
        var states: [String: [String: String]] = [:]
        for member in sortedMembers { states[member.userId] = member.state }
        return states
    }

    /// Applies one presence event and returns what looked wrong: an event before the snapshot,
    /// `seq` not growing, an event about the viewer's own user, a leave with a state, or an edit
    /// that does not fit the roster (a join of a member, a leave of a non-member, …).
    mutating func applyChecked(_ event: JSON, viewer: String) -> [String] {
        var problems: [String] = []
        let type = event.string("type") ?? "?"
        guard let eventSeq = event.int("seq") else { return ["presence event without seq: \(event.compactString)"] }
        if type != "snapshot" {
            if lastKind == nil { problems.append("\(type) before the snapshot") }
            if let last = seq, eventSeq <= last { problems.append("seq went from \(last) to \(eventSeq) (\(type))") }
            if type != "interval", event.string("publisher") == viewer { problems.append("\(type) about the viewer's own user") }
            if type == "leave" || type == "timeout", event["state"] != nil { problems.append("\(type) carries a state") }
        }
        let ownJoins = Set((event["interval"]?["join"]?.arrayValue ?? []).compactMap(\.stringValue)).intersection([viewer])
        apply(Event(event.objectValue ?? JSONObject())) { change in
            guard case .unexpected(let what) = change else { return }
            if !ownJoins.isEmpty, what == "interval join of \(viewer), already a member" { return }
            problems.append(what)
        }
        return problems
    }
}
