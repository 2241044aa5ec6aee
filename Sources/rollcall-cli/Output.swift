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

    /// `1710487149497` as an ISO-8601 UTC time.
    static func time(_ milliseconds: Int?) -> String {
        guard let milliseconds else { return "?" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// One event in human-readable form.
    /// ` info={…}` for a member's token `info` (1.1); empty when there is none.
    static func info(_ value: JSON?) -> String {
        guard let value, value.objectValue != nil else { return "" }
        return " info=\(value.compactString)"
    }

    static func event(_ event: Event, _ style: Style = .plain) -> String {
        let channel = event["channel"]?.stringValue ?? ""
        let stream = event["channelType"]?.stringValue == "stream" ? " (stream)" : ""
        let clock = style.dim("[\(time(event["timestamp"]?.numberValue?.intValue).suffix(13))]")
        switch event.name {
        case "presence":
            let type = event.type ?? "?"
            let who = style.bold(event["publisher"]?.stringValue ?? "")
            let occupancy = event["occupancy"]?.numberValue?.intValue.map(String.init) ?? "?"
            let head = "\(clock) \(channel)\(stream) \(style.presenceType(type))"
            switch type {
            case "snapshot":
                let members = event["snapshot"]?.arrayValue ?? []
                var text = "\(head): \(members.count) member(s), occupancy \(occupancy), seq \(event["seq"]?.compactString ?? "?")"
                for member in members {
                    text += "\n    \(style.bold(member["userId"]?.stringValue ?? "?")) \(state(member["state"]))\(info(member["info"]))"
                }
                if event["truncated"]?.boolValue == true { text += "\n    … truncated, nextPage \(event["nextPage"]?.compactString ?? "null")" }
                return text
            case "interval":
                let delta = event["interval"]
                func list(_ key: String) -> String {
                    (delta?[key]?.arrayValue ?? []).compactMap { $0.stringValue.map(style.bold) }.joined(separator: ", ")
                }
                var text = "\(head): occupancy \(occupancy)"
                for key in ["join", "leave", "timeout"] where !list(key).isEmpty { text += "\n    \(style.presenceType(key)): \(list(key))" }
                for entry in delta?["joinInfo"]?.objectValue?.members ?? [] {
                    text += "\n    \(style.bold(entry.key))\(info(entry.value))"
                }
                for change in delta?["stateChanged"]?.arrayValue ?? [] {
                    text += "\n    \(style.presenceType("stateChanged")): \(style.bold(change["userId"]?.stringValue ?? "?")) \(state(change["state"]))"
                }
                return text
            case "join", "stateChanged":
                return "\(head) \(who) \(state(event["state"]))\(info(event["info"])) (occupancy \(occupancy))"
            default:
                return "\(head) \(who) (occupancy \(occupancy))"
            }
        case "message":
            let from = style.bold(event["publisher"]?.stringValue ?? "?")
            let message = event["message"].map { $0.stringValue ?? $0.compactString } ?? ""
            return "\(clock) \(channel)\(stream) <\(from)> \(message)"
        case "session":
            return "\(style.dim("[session]")) \(event.type ?? "?"): the token expires at \(time(event["expiresAt"]?.numberValue?.intValue))"
        case "userStatus":
            return (event["statuses"]?.arrayValue ?? []).map { status in
                "\(style.dim("[status]")) \(style.bold(status["userId"]?.stringValue ?? "?")): \(style.userStatus(status["status"]?.stringValue ?? "?"))"
                    + (status["customStatus"]?.stringValue.map { " \"\($0)\"" } ?? "")
            }.joined(separator: "\n")
        default:
            return event.description
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
