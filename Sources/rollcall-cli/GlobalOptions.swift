import ArgumentParser
import Foundation
import RollcallClient
import RollcallProtocol

/// Options every command accepts (before or after the command name).
struct GlobalOptions: ParsableArguments {
    @Option(help: "Broker WebSocket URL; several, comma-separated (a cluster's nodes): `watch` resumes on the next one when its node goes away, other commands use the first.")
    var url = "ws://127.0.0.1:8080/v1"

    /// Every URL given in `--url`, in order.
    var urls: [String] { url.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }

    @Option(help: "User id to log in as (default: $USER or 'cli').")
    var user: String?

    @Option(help: "Platform reported at login.")
    var platform = "cli"

    @Option(help: "Login token (JWT) when the broker requires one.")
    var token: String?

    @Flag(help: "Print raw JSON (one object per line) instead of human-readable text.")
    var json = false

    @Flag(help: "For wss:// URLs, accept a self-signed certificate and skip the host name check (development only).")
    var insecure = false

    @Flag(help: "Offer WebSocket compression (permessage-deflate); used when the broker runs with http.permessageDeflate on.")
    var deflate = false

    @Option(help: "Seconds to wait for each reply.")
    var timeout: Double = 10

    @Option(help: ArgumentHelp("Colour human-readable output: always, never, or auto (only on a terminal, and not when NO_COLOR is set).", valueName: "when"))
    var color: ColorChoice = .auto

    /// The styling for human-readable output (always plain with `--json`).
    var style: Style { json ? .plain : Style.resolve(color) }

    /// The user id to log in with.
    var userId: String {
        user ?? ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "cli"
    }

    var replyTimeout: Duration { .milliseconds(Int64(timeout * 1000)) }

    static let valueOptions: Set<String> = ["--url", "--user", "--platform", "--token", "--timeout", "--color"]
    static let flagOptions: Set<String> = ["--json", "--insecure", "--deflate"]

    /// Moves global options written before the command name to the end of the arguments,
    /// so that both `rollcall-cli --user a ping` and `rollcall-cli ping --user a` work.
    static func reorder(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            if flagOptions.contains(argument) {
                leading.append(argument); index += 1
            } else if valueOptions.contains(name) {
                leading.append(argument)
                if !argument.contains("="), index + 1 < arguments.count {
                    leading.append(arguments[index + 1]); index += 1
                }
                index += 1
            } else {
                break
            }
        }
        guard !leading.isEmpty else { return arguments }
        var rest = Array(arguments[index...])
        if let terminator = rest.firstIndex(of: "--") {
            rest.insert(contentsOf: leading, at: terminator)
        } else {
            rest.append(contentsOf: leading)
        }
        return rest
    }
}

/// A connected, logged-in CLI session.
struct Session {
    let connection: RollcallConnection
    /// The `--url` value it connected to.
    var url: String = ""
    let options: GlobalOptions
    let loginReply: Reply

    /// Connects to (the first) `--url` and logs in as `--user`; exits with a message on failure.
    static func open(_ options: GlobalOptions) throws -> Session {
        let url = options.urls.first ?? options.url
        let connection: RollcallConnection
        do {
            connection = try RollcallConnection.connect(
                url: url, subprotocol: "rollcall.v1", timeout: options.replyTimeout,
                allowSelfSignedCertificate: options.insecure, permessageDeflate: options.deflate)
        } catch {
            Output.fail("cannot connect to \(url): \(error)", code: 2)
        }
        let reply = try request(connection, options) { () throws(ClientError) -> Reply in
            try connection.login(userId: options.userId, platform: options.platform, token: options.token, timeout: options.replyTimeout)
        }
        if !reply.ok { Output.failReply(reply, options) }
        return Session(connection: connection, url: url, options: options, loginReply: reply)
    }

    /// Connects to `url` and logs in as a new session; nil on any failure (no exit).
    static func openQuietly(_ options: GlobalOptions, url: String) throws -> Session? {
        guard let connection = try? RollcallConnection.connect(
                url: url, subprotocol: "rollcall.v1", timeout: options.replyTimeout,
                allowSelfSignedCertificate: options.insecure, permessageDeflate: options.deflate),
              let reply = try? connection.login(userId: options.userId, platform: options.platform, token: options.token,
                                                timeout: options.replyTimeout),
              reply.ok else { return nil }
        return Session(connection: connection, url: url, options: options, loginReply: reply)
    }

    /// After the connection went away: connects to `url` and resumes the session with its
    /// resume token (nil when no URL answers or the login fails).
    func resumed(on url: String) -> Session? {
        guard let token = loginReply["resumeToken"]?.stringValue,
              let connection = try? RollcallConnection.connect(
                url: url, subprotocol: "rollcall.v1", timeout: options.replyTimeout,
                allowSelfSignedCertificate: options.insecure, permessageDeflate: options.deflate),
              let reply = try? connection.login(userId: options.userId, platform: options.platform, token: options.token,
                                                resumeToken: token, timeout: options.replyTimeout),
              reply.ok else { return nil }
        return Session(connection: connection, url: url, options: options, loginReply: reply)
    }

    /// Sends one request and waits for its reply; exits on a transport failure.
    func request(_ op: String, _ args: JSON = [:]) throws -> Reply {
        try Self.request(connection, options) { () throws(ClientError) -> Reply in try connection.request(op, args, timeout: options.replyTimeout) }
    }

    /// Sends one request of the protocol's ``Op`` vocabulary and waits for its reply; exits on a
    /// transport failure.
    func request(_ op: Op, _ args: JSON = [:]) throws -> Reply {
        try request(op.rawValue, args)
    }

    /// ``call(_:_:)-(String,_)`` for an op of the protocol.
    func call(_ op: Op, _ args: JSON = [:]) throws -> Reply {
        try call(op.rawValue, args)
    }

    /// Sends one request and returns its result; on an error reply logs out (so the user is
    /// not left online through a held session) and exits with the error code.
    func call(_ op: String, _ args: JSON = [:]) throws -> Reply {
        let reply = try request(op, args)
        if !reply.ok {
            finish()
            Output.failReply(reply, options)
        }
        return reply
    }

    private static func request(_ connection: RollcallConnection, _ options: GlobalOptions, _ body: () throws(ClientError) -> Reply) throws -> Reply {
        do {
            return try body()
        } catch {
            Output.fail("\(error)", code: 3)
        }
    }

    /// The one-request commands: logs in, calls `op` (an error reply exits with its code),
    /// prints the reply (its JSON with `--json`, else `text(reply)`), and logs out.
    static func callOnce(_ options: GlobalOptions, _ op: Op, _ args: JSON, printing text: (Reply) -> String) throws {
        let session = try open(options)
        let reply = try session.call(op, args)
        Output.line(options.json ? reply.description : text(reply))
        session.finish()
    }

    /// Logs out politely (best effort) before the process exits.
    func finish() {
        _ = try? connection.request(.logout, timeout: .seconds(2))
        _ = try? connection.waitForClose(timeout: .seconds(2))
    }
}
