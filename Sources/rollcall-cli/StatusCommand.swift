import ArgumentParser
import Foundation
import RollcallClient
import RollcallProtocol

/// `rollcall-cli status …`: user status across devices (PROTOCOL §6).
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Read, set, watch and list user status (online / offline / loggedOut, custom status).",
        subcommands: [Get.self, Set.self, Clear.self, Watch.self, Subscriptions.self])

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the status of users (getUserStatus).",
            discussion: "Asking about anyone but yourself uses one call of the broker's userStatus.queryRate.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Users to look up (at most 500).") var userIds: [String]

        func validate() throws {
            if userIds.isEmpty { throw ValidationError("name at least one user") }
        }

        func run() throws {
            let session = try Session.open(global)
            let reply = try session.call(.getUserStatus, ["userIds": .array(userIds.map { .string($0) })])
            if global.json {
                Output.line(reply.description)
            } else {
                for record in reply["statuses"]?.arrayValue ?? [] { Output.line(StatusText.record(record, global.style)) }
                StatusText.printFailures(reply)
            }
            session.finish()
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set your custom status text (setCustomStatus).",
            discussion: "The text is kept after you log out, until it expires (userStatus.customStatusTtlSeconds) or is cleared.")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The custom status, e.g. 'In a meeting' (an empty string clears).") var text: String

        func run() throws {
            try Session.callOnce(global, .setCustomStatus, ["customStatus": .string(text)]) {
                StatusText.customStatusLine($0["status"], user: global.userId)
            }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Clear your custom status (setCustomStatus null).")
        @OptionGroup var global: GlobalOptions

        func run() throws {
            try Session.callOnce(global, .setCustomStatus, ["customStatus": .null]) {
                StatusText.customStatusLine($0["status"], user: global.userId)
            }
        }
    }

    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Subscribe to users and print their status changes until Ctrl-C.",
            discussion: """
                Prints the current status of each user, then one line per change. On exit it \
                unsubscribes from the users it subscribed to (those you already followed stay \
                subscribed), unless --keep is given.
                """)
        @OptionGroup var global: GlobalOptions
        @Argument(help: "Users to watch (at most 100).") var userIds: [String]
        @Option(help: "Subscription duration in seconds (60...2592000; the broker's default is 86400).") var duration: Int?
        @Option(name: .customLong("for"), help: "Stop after this many seconds instead of waiting for Ctrl-C.") var seconds: Double?
        @Flag(help: "Keep the subscriptions when exiting.") var keep = false

        func validate() throws {
            if userIds.isEmpty { throw ValidationError("name at least one user") }
            if let seconds, !(seconds > 0) { throw ValidationError("--for must be a positive number of seconds") }
        }

        func run() throws {
            let interrupted = InterruptFlag()
            let session = try Session.open(global)
            let ids: JSON = .array(userIds.map { .string($0) })
            let before = try session.call(.getSubscriptions, ["userIds": ids])
            let alreadyFollowed = Swift.Set((before["subscriptions"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })

            var args = JSONObject([("userIds", ids)])
            if let duration { args["duration"] = .int(duration) }
            let reply = try session.call(.subscribeUserStatus, .object(args))
            let watched = (reply["statuses"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue }
            if global.json {
                Output.line(reply.description)
            } else {
                StatusText.printFailures(reply)
                Output.line("watching \(watched.count) user(s) as \(global.userId)" + (seconds.map { " for \($0) s" } ?? " (Ctrl-C to stop)"))
                for record in reply["statuses"]?.arrayValue ?? [] { Output.line(StatusText.record(record, global.style)) }
            }
            if watched.isEmpty { Output.fail("no user could be watched", code: 1) }

            let deadline = seconds.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
            while !interrupted.isSet {
                if let deadline, ContinuousClock.now >= deadline { break }
                switch Result(catching: { () throws(ClientError) -> Event in try session.connection.nextEvent(timeout: .milliseconds(200)) }) {
                case .success(let event):
                    if global.json {
                        Output.line(event.description)
                    } else if let text = StatusText.event(event, global.style) {
                        Output.line(text)
                    }
                case .failure(let error):
                    if case .closed(let info) = error {
                        Output.fail("connection closed: \(info)", code: info.code == 1000 ? 0 : 4)
                    }
                }
            }
            let added = watched.filter { !alreadyFollowed.contains($0) }
            if !keep, !added.isEmpty {
                _ = try? session.connection.request(.unsubscribeUserStatus, ["userIds": .array(added.map { .string($0) })], timeout: .seconds(2))
            }
            if !global.json { Output.line("stopped watching") }
            session.finish()
        }
    }

    struct Subscriptions: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "subs", abstract: "List your status subscriptions (getSubscriptions), following every page.")
        @OptionGroup var global: GlobalOptions
        @Option(help: "Subscriptions per page (1...200).") var pageSize: Int = 100

        func run() throws {
            let session = try Session.open(global)
            var page: JSON = .null
            var entries: [JSON] = []
            repeat {
                var args = JSONObject([("pageSize", .int(pageSize))])
                if case .string = page { args["page"] = page }
                let reply = try session.call(.getSubscriptions, .object(args))
                if global.json { Output.line(reply.description) }
                entries += reply["subscriptions"]?.arrayValue ?? []
                page = reply["nextPage"] ?? .null
            } while page.stringValue != nil
            if !global.json {
                Output.line("\(global.userId) subscribes to \(entries.count) user(s)")
                for entry in entries {
                    let status = entry["status"].map { StatusText.record($0, global.style) } ?? global.style.bold(entry["userId"]?.stringValue ?? "?")
                    Output.line("  \(status); expires \(Output.time(entry["expiresAt"]?.numberValue?.intValue))")
                }
            }
            session.finish()
        }
    }
}

/// Human-readable status records and events.
enum StatusText {
    /// A record of a reply, typed (``StatusRecord``) and printed as ``record(_:_:)-(StatusRecord,_)``;
    /// one that does not have the documented shape shows its user id only.
    static func record(_ record: JSON, _ style: Style = .plain) -> String {
        guard let typed = try? record.decode(StatusRecord.self) else { return style.bold(record["userId"]?.stringValue ?? "?") }
        return self.record(typed, style)
    }

    /// `custom status of alice: "Busy"` or `custom status of alice cleared`.
    static func customStatusLine(_ record: JSON?, user: String) -> String {
        if let custom = record?["customStatus"]?.stringValue { return "custom status of \(user): \"\(custom)\"" }
        return "custom status of \(user) cleared"
    }

    /// `bob: online on ios, web, "Busy" (since 2025-11-22T07:00:00.000Z)`, from a typed record.
    static func record(_ record: StatusRecord, _ style: Style = .plain) -> String {
        var text = "\(style.bold(record.userId)): \(style.userStatus(record.status.rawValue))"
        if !record.platforms.isEmpty { text += " on \(record.platforms.joined(separator: ", "))" }
        if let custom = record.customStatus { text += ", \"\(custom)\"" }
        let since = record.lastOnlineStatusUpdateTime ?? 0
        text += style.dim(since > 0 ? " (since \(Output.time(since)))" : " (never seen)")
        return text
    }

    /// One line per record of a `userStatus` event, or the lists of a `subscriptions` event
    /// (typed, ``RollcallEvent``); nil for other events.
    static func event(_ event: Event, _ style: Style = .plain) -> String? {
        let clock = style.dim("[\(Output.time(Int(Date().timeIntervalSince1970 * 1000)).suffix(13))]")
        switch RollcallEvent(event) {
        case .userStatus(let update):
            return update.statuses.map { "\(clock) \(record($0, style))" }.joined(separator: "\n")
        case .subscriptions(let change):
            func list(_ ids: [String]) -> String { ids.isEmpty ? "-" : ids.joined(separator: ", ") }
            return "\(clock) subscriptions changed: added \(list(change.added)); removed \(list(change.removed))"
        default:
            return nil
        }
    }

    /// Prints `failed` entries of a batch reply on stderr.
    static func printFailures(_ reply: Reply) {
        for failure in reply["failed"]?.arrayValue ?? [] {
            let id = failure["userId"]?.stringValue ?? "?"
            FileHandle.standardError.write(Data("failed: \(id.debugDescription): \(failure["code"]?.stringValue ?? "?")\n".utf8))
        }
    }
}
