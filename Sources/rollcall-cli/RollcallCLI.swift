import ArgumentParser
import Foundation
import RollcallClient
import RollcallProtocol

/// `rollcall-cli`: talk to a Rollcall broker from the shell.
struct RollcallCLI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollcall-cli",
        abstract: "Talk to a Rollcall presence broker.",
        discussion: "Global options (--url, --user, --platform, --token, --json, --color, --timeout, --insecure) may come before or after the command. Output is coloured on a terminal unless NO_COLOR is set; --color always|never forces it.",
        subcommands: [Ping.self, Raw.self, Join.self, Watch.self, Who.self, Where.self, StateCommand.self, Publish.self, StatusCommand.self, Token.self, Refresh.self, APICommand.self]
    )
}

/// Entry point: reorders global options, then runs the parsed command.
@main
enum CLIMain {
    static func main() {
        RollcallCLI.main(GlobalOptions.reorder(Array(CommandLine.arguments.dropFirst())))
    }
}

/// The channel type selected by `--stream`.
func channelType(_ stream: Bool) -> JSON { stream ? "stream" : "message" }

struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Log in, ping, print the server time and round trip.")
    @OptionGroup var global: GlobalOptions

    func run() throws {
        let session = try Session.open(global)
        let started = ContinuousClock.now
        let reply = try session.call(.ping)
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
        if global.json {
            Output.line(reply.description)
        } else {
            let serverTime = reply["serverTime"]?.numberValue?.intValue
            let style = global.style
            Output.line("\(style.green("pong")) from \(global.url): server time \(Output.time(serverTime)) (\(serverTime.map(String.init) ?? "?")), round trip \(String(format: "%.2f", milliseconds)) ms")
        }
        session.finish()
    }
}

struct Raw: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send any request (after login) and print its reply.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The op, e.g. getUserStatus.") var op: String
    @Argument(help: "Arguments as a JSON object, e.g. '{\"userIds\":[\"bob\"]}'.") var arguments: String = "{}"

    func run() throws {
        let args: JSON
        do { args = try JSONParser.parse(arguments) } catch { throw ValidationError("JSON-ARGS is not valid JSON: \(error)") }
        guard case .object = args else { throw ValidationError("JSON-ARGS must be a JSON object") }
        let session = try Session.open(global)
        let reply = op == Op.login.rawValue ? session.loginReply : try session.request(op, args)
        Output.line(reply.description)
        if op != Op.logout.rawValue { session.finish() }
        if !reply.ok { Output.fail("\(reply.errorCodeText ?? "UNKNOWN"): \(reply.errorMessage ?? "")", code: 1) }
    }
}

struct Join: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Join a channel and print events until Ctrl-C.")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel to join.") var channel: String
    @Option(name: .long, parsing: .upToNextOption, help: "State entries key=value.") var state: [String] = []
    @Flag(help: "Use the stream channel type.") var stream = false
    @Flag(name: .customLong("no-presence"), help: "Do not receive presence events.") var noPresence = false
    @Flag(name: .customLong("no-messages"), help: "Do not receive messages.") var noMessages = false

    func run() throws {
        var args = JSONObject([("channel", .string(channel)), ("channelType", channelType(stream))])
        args["presence"] = .bool(!noPresence)
        args["messages"] = .bool(!noMessages)
        if !state.isEmpty { args["state"] = try parseAssignments(state) }
        // Catch Ctrl-C before anything is printed, so a quick interrupt still leaves politely.
        let interrupted = InterruptFlag()
        let session = try Session.open(global)
        let reply = try session.call(.join, .object(args))
        if global.json {
            Output.line(reply.description)
        } else {
            Output.line("\(global.style.green("joined")) \(channel) as \(global.style.bold(global.userId)): occupancy \(reply["occupancy"]?.compactString ?? "?"), mode \(reply["mode"]?.stringValue ?? "?") (Ctrl-C to leave)")
        }

        while !interrupted.isSet {
            switch Result(catching: { () throws(ClientError) -> Event in try session.connection.nextEvent(timeout: .milliseconds(250)) }) {
            case .success(let event):
                Output.line(global.json ? event.description : Output.event(event, global.style))
            case .failure(let error):
                if case .closed(let info) = error {
                    Output.fail("connection closed: \(info)", code: info.code == 1000 ? 0 : 4)
                }
            }
        }
        if !global.json { Output.line("\(global.style.yellow("leaving")) \(channel)") }
        session.finish()
    }
}

/// Set when SIGINT or SIGTERM arrives.
final class InterruptFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var set = false
    private var sources: [DispatchSourceSignal] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.raise() }
            source.resume()
            sources.append(source)
        }
    }

    private func raise() { lock.withLock { set = true } }

    var isSet: Bool { lock.withLock { set } }
}

struct Who: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the users online in a channel (getOnlineUsers).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel to list.") var channel: String
    @Flag(help: "Include each user's state.") var state = false
    @Flag(help: "Follow nextPage until the end.") var all = false
    @Flag(help: "Use the stream channel type.") var stream = false
    @Option(help: "Users per page (1...1000).") var pageSize: Int = 100

    func run() throws {
        let session = try Session.open(global)
        var page: JSON = .null
        var total = 0
        var printedHeader = false
        repeat {
            var args = JSONObject([("channel", .string(channel)), ("channelType", channelType(stream))])
            args["includeState"] = .bool(state)
            args["pageSize"] = .int(pageSize)
            if case .string = page { args["page"] = page }
            let reply = try session.call(.getOnlineUsers, .object(args))
            total = reply["totalOccupancy"]?.numberValue?.intValue ?? total
            if global.json {
                Output.line(reply.description)
            } else {
                if !printedHeader { Output.line("\(total) user(s) in \(channel)"); printedHeader = true }
                for user in reply["users"]?.arrayValue ?? [] {
                    let id = user["userId"]?.stringValue ?? "?"
                    let name = global.style.bold(id)
                    Output.line((state ? "  \(name) \(Output.state(user["state"]))" : "  \(name)") + Output.info(user["info"]))
                }
            }
            page = reply["nextPage"] ?? .null
        } while all && page.stringValue != nil
        if !global.json, !all, let next = page.stringValue { Output.line("  … more (nextPage \(next); use --all)") }
        session.finish()
    }
}

struct Where: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the channels a user is in (getUserChannels).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The user to look up.") var userId: String

    func run() throws {
        let session = try Session.open(global)
        let reply = try session.call(.getUserChannels, ["userId": .string(userId)])
        if global.json {
            Output.line(reply.description)
        } else {
            let channels = reply["channels"]?.arrayValue ?? []
            Output.line("\(global.style.bold(userId)) is in \(reply["totalChannel"]?.compactString ?? String(channels.count)) channel(s)")
            for entry in channels {
                Output.line("  \(entry["channel"]?.stringValue ?? "?") (\(entry["channelType"]?.stringValue ?? "message"))")
            }
        }
        session.finish()
    }
}

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state", abstract: "Set, remove or read channel state.",
        subcommands: [Set.self, Remove.self, Get.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Merge key=value entries into your state (setState).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The channel.") var channel: String
        @Argument(help: "Entries key=value.") var entries: [String]
        @Flag(help: "Use the stream channel type.") var stream = false

        func run() throws {
            let user = global.userId
            try Session.callOnce(global, .setState, [
                "channel": .string(channel), "channelType": channelType(stream), "state": try parseAssignments(entries),
            ]) { reply in
                "state in \(channel): \(Output.state(reply["state"]))" + (reply["pending"]?.boolValue == true
                    ? " (pending: \(user) is not in \(channel), and state held for a later join ends with this command; join first, e.g. in another terminal)"
                    : "")
            }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove keys from your state (removeState).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The channel.") var channel: String
        @Argument(help: "Keys to remove.") var keys: [String]
        @Flag(help: "Use the stream channel type.") var stream = false

        func run() throws {
            try Session.callOnce(global, .removeState, [
                "channel": .string(channel), "channelType": channelType(stream), "keys": .array(keys.map { .string($0) }),
            ]) { "state in \(channel): \(Output.state($0["state"]))" }
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Read a user's state in a channel (getState).")
        @OptionGroup var global: GlobalOptions
        @Argument(help: "The channel.") var channel: String
        @Argument(help: "The user whose state to read.") var userId: String
        @Flag(help: "Use the stream channel type.") var stream = false

        func run() throws {
            try Session.callOnce(global, .getState, [
                "channel": .string(channel), "channelType": channelType(stream), "userId": .string(userId),
            ]) { "\(userId) in \(channel): \(Output.state($0["state"]))" }
        }
    }
}

struct Publish: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Publish a message (JSON if it parses, else a string).")
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel to publish to.") var channel: String
    @Argument(help: "The message: JSON when it parses (e.g. '{\"text\":\"hi\"}'), else sent as a string.") var message: String
    @Flag(help: "Use the stream channel type.") var stream = false

    func run() throws {
        let payload: JSON = (try? JSONParser.parse(message)) ?? .string(message)
        try Session.callOnce(global, .publish, ["channel": .string(channel), "channelType": channelType(stream), "message": payload]) {
            "published to \(channel): \($0["recipients"]?.compactString ?? "?") recipient(s)"
        }
    }
}
