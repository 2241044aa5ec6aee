import ArgumentParser
import Foundation
import RollcallClient
import RollcallProtocol

/// Printing helpers shared by the commands.
enum Output {
    /// Prints a line to stdout and flushes (output is often piped).
    static func line(_ text: String) {
        print(text)
        fflush(stdout)
    }

    /// Writes text to stdout as is (no newline added) and flushes.
    static func raw(_ text: String) {
        print(text, terminator: "")
        fflush(stdout)
    }

    /// Prints to stderr and exits with `code`.
    static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
        exit(code)
    }

    /// Reports an error reply (the whole reply on stdout with `--json`, the code and message
    /// on stderr otherwise) and exits 1.
    static func failReply(_ reply: Reply, _ options: GlobalOptions) -> Never {
        if options.json { line(reply.description) }
        fail("\(reply.errorCodeText ?? "UNKNOWN"): \(reply.errorMessage ?? "")", code: 1)
    }

    /// A string map `{k: v}` as `k=v, k=v`.
    static func state(_ value: JSON?) -> String {
        guard let object = value?.objectValue, object.count > 0 else { return "{}" }
        return object.members.map { "\($0.key)=\($0.value.stringValue ?? $0.value.compactString)" }.joined(separator: ", ")
    }

    /// A typed state `{k: v}` as `k=v, k=v`, in key order.
    static func state(_ state: [String: String]?) -> String {
        guard let state, !state.isEmpty else { return "{}" }
        return state.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
    }

    /// `1710487149497` as an ISO-8601 UTC time.
    static func time(_ milliseconds: Int?) -> String {
        guard let milliseconds else { return "?" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// ` info={…}` for a member's token `info` (1.1); empty when there is none.
    static func info(_ value: JSON?) -> String {
        guard let value, value.objectValue != nil else { return "" }
        return " info=\(value.compactString)"
    }

    /// One event in human-readable form, from its typed shape (``RollcallEvent``); an event this
    /// client does not know, or one that does not have the documented shape, is printed as sent.
    static func event(_ event: Event, _ style: Style = .plain) -> String {
        switch RollcallEvent(event) {
        case .presence(let presence): return self.presence(presence, style)
        case .message(let message):
            let clock = style.dim("[\(time(message.timestamp).suffix(13))]")
            let text = message.message.stringValue ?? message.message.compactString
            return "\(clock) \(message.channel)\(stream(message.channelType)) <\(style.bold(message.publisher))> \(text)"
        case .session(let notice):
            return "\(style.dim("[session]")) \(notice.type): the token expires at \(time(notice.expiresAt))"
        case .userStatus(let update):
            return update.statuses.map { status in
                "\(style.dim("[status]")) \(style.bold(status.userId)): \(style.userStatus(status.status.rawValue))"
                    + (status.customStatus.map { " \"\($0)\"" } ?? "")
            }.joined(separator: "\n")
        case .subscriptions, .other:
            return event.description
        }
    }

    private static func stream(_ type: ChannelType) -> String { type == .stream ? " (stream)" : "" }

    private static func presence(_ event: PresenceEvent, _ style: Style) -> String {
        let clock = style.dim("[\(time(event.timestamp).suffix(13))]")
        let who = style.bold(event.publisher ?? "")
        let occupancy = event.occupancy.map(String.init) ?? "?"
        let head = "\(clock) \(event.channel)\(stream(event.channelType)) \(style.presenceType(event.type.rawValue))"
        switch event.type {
        case .snapshot:
            let members = event.snapshot ?? []
            var text = "\(head): \(members.count) member(s), occupancy \(occupancy), seq \(event.seq.map(String.init) ?? "?")"
            for member in members {
                text += "\n    \(style.bold(member.userId)) \(state(member.state))\(info(member.info))"
            }
            if event.truncated == true { text += "\n    … truncated, nextPage \(event.nextPage.map { JSON.string($0).compactString } ?? "null")" }
            return text
        case .interval:
            let delta = event.interval ?? IntervalChange()
            func list(_ ids: [String]) -> String { ids.map(style.bold).joined(separator: ", ") }
            var text = "\(head): occupancy \(occupancy)"
            for (key, ids) in [("join", delta.join), ("leave", delta.leave), ("timeout", delta.timeout)] where !ids.isEmpty {
                text += "\n    \(style.presenceType(key)): \(list(ids))"
            }
            for (user, value) in (delta.joinInfo ?? [:]).sorted(by: { $0.key < $1.key }) {
                text += "\n    \(style.bold(user))\(info(value))"
            }
            for change in delta.stateChanged {
                text += "\n    \(style.presenceType("stateChanged")): \(style.bold(change.userId)) \(state(change.state))"
            }
            return text
        case .join, .stateChanged:
            return "\(head) \(who) \(state(event.state))\(info(event.info)) (occupancy \(occupancy))"
        case .leave, .timeout:
            return "\(head) \(who) (occupancy \(occupancy))"
        }
    }
}

/// Parses `k=v` arguments into a JSON string map.
func parseAssignments(_ items: [String]) throws -> JSON {
    var object = JSONObject()
    for item in items {
        guard let equals = item.firstIndex(of: "=") else {
            throw ValidationError("expected key=value, got '\(item)'")
        }
        object[String(item[..<equals])] = .string(String(item[item.index(after: equals)...]))
    }
    return .object(object)
}
