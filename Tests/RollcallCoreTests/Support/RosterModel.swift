import RollcallProtocol
import Testing

/// What a client holds for one channel after applying its snapshot and then every presence
/// event in order (the PROTOCOL §4 invariant). Interval events apply `join` (user added
/// with an empty state), then `leave`/`timeout`, then `stateChanged`.
struct RosterModel {
    /// The user whose session holds this roster.
    let viewer: String
    /// User → state.
    private(set) var members: [String: [String: String]] = [:]
    /// The seq of the last snapshot or event applied; nil before the snapshot.
    private(set) var seq: Int?
    /// Problems found while applying (an event before the snapshot, seq going back, …).
    private(set) var problems: [String] = []

    init(viewer: String) { self.viewer = viewer }

    /// Forgets the problems found so far.
    mutating func clearProblems() { problems = [] }

    /// Applies one presence event.
    mutating func apply(_ event: JSON) {
        guard let type = event.string("type"), let eventSeq = event.int("seq") else {
            problems.append("presence event without type or seq: \(event.compactString)")
            return
        }
        if type == "snapshot" {
            members = [:]
            for entry in event["snapshot"]?.arrayValue ?? [] {
                members[entry.string("userId") ?? "?"] = entry["state"]?.stringMap ?? [:]
            }
            seq = eventSeq
            return
        }
        guard let last = seq else {
            problems.append("\(type) before the snapshot")
            return
        }
        if eventSeq <= last { problems.append("seq went from \(last) to \(eventSeq) (\(type))") }
        seq = eventSeq
        let publisher = event.string("publisher") ?? ""
        if type != "interval", publisher == viewer { problems.append("\(type) about the viewer's own user") }
        switch type {
        case "join":
            if members[publisher] != nil { problems.append("join of \(publisher) already present") }
            members[publisher] = event["state"]?.stringMap ?? [:]
        case "leave", "timeout":
            if members[publisher] == nil { problems.append("\(type) of \(publisher) not present") }
            if event["state"] != nil { problems.append("\(type) carries a state") }
            members[publisher] = nil
        case "stateChanged":
            if members[publisher] == nil { problems.append("stateChanged of \(publisher) not present") }
            members[publisher] = event["state"]?.stringMap ?? [:]
        case "interval":
            let change = event["interval"] ?? .null
            for user in change["join"]?.arrayValue ?? [] {
                let id = user.stringValue ?? "?"
                if members[id] != nil, id != viewer { problems.append("interval join of \(id) already present") }
                members[id] = [:]
            }
            for user in (change["leave"]?.arrayValue ?? []) + (change["timeout"]?.arrayValue ?? []) {
                let id = user.stringValue ?? "?"
                if members[id] == nil { problems.append("interval leave of \(id) not present") }
                members[id] = nil
            }
            for entry in change["stateChanged"]?.arrayValue ?? [] {
                let id = entry.string("userId") ?? "?"
                if members[id] == nil { problems.append("interval stateChanged of \(id) not present") }
                members[id] = entry["state"]?.stringMap ?? [:]
            }
        default:
            problems.append("unknown presence event type \(type)")
        }
    }
}
