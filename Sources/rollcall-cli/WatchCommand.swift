import ArgumentParser
import Foundation
import RollcallClient
import RollcallProtocol

/// `rollcall-cli watch CHANNEL`: joins with presence (no messages) and shows the live roster —
/// redrawn in place on a terminal, one line per change otherwise.
struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join a channel and show its live roster (mode, occupancy, members) until Ctrl-C.",
        discussion: """
            Joins with presence events on and messages off, keeps the roster from the snapshot \
            and every join/leave/timeout/stateChanged/interval event, and fetches the rest of a \
            truncated snapshot with getOnlineUsers. On a terminal the roster is redrawn in place; \
            when stdout is not a terminal (or with --json) one line is printed per change. \
            Ctrl-C logs out, so others see a leave. When the connection goes away without a \
            final close (its node stopped or was killed), watch resumes the session on the next of \
            the comma-separated --url values (a cluster's nodes), retrying for a few seconds, or \
            joins again with a new session if the hold ended. After close 1012 (the cluster lost \
            its data) it logs in again at once and joins again.
            """)
    @OptionGroup var global: GlobalOptions
    @Argument(help: "The channel to watch.") var channel: String
    @Flag(help: "Use the stream channel type.") var stream = false
    @Flag(help: "Show each member's state.") var state = false
    @Option(help: "Recent events shown under the roster (terminal mode).") var recent: Int = 5
    @Option(help: "Members shown at most (terminal mode); the rest are counted.") var maxMembers: Int = 40

    func validate() throws {
        if recent < 0 { throw ValidationError("--recent must be 0 or more") }
        if maxMembers < 1 { throw ValidationError("--max-members must be 1 or more") }
    }

    func run() throws {
        let interrupted = InterruptFlag()
        let style = global.style
        let live = !global.json && isatty(STDOUT_FILENO) == 1
        var session = try Session.open(global)
        let reply = try join(on: session)
        var model = Roster(channel: channel, channelType: stream ? "stream" : "message")
        var recentLines: [String] = []
        if global.json {
            Output.line(reply.description)
        } else if !live {
            Output.line("\(style.green("watching")) \(channel) as \(style.bold(global.userId)): occupancy \(reply["occupancy"]?.compactString ?? "?"), mode \(reply["mode"]?.stringValue ?? "?") (Ctrl-C to leave)")
        }

        while !interrupted.isSet {
            let event: Event
            switch Result(catching: { () throws(ClientError) -> Event in try session.connection.nextEvent(timeout: .milliseconds(250)) }) {
            case .success(let received): event = received
            case .failure(let error):
                if case .closed(let info) = error {
                    if info.isClusterDataLost, let next = logInAgain(after: session, interrupted: interrupted) {
                        session = next
                        if !global.json, !live { Output.line("\(style.yellow("logged in again")) to \(next.url): the cluster lost its data") }
                        _ = try join(on: session)
                        continue
                    }
                    if !Self.isFinal(info.code), let next = reconnect(session, interrupted: interrupted) {
                        session = next
                        if !global.json, !live { Output.line("\(style.yellow("reconnected")) to \(next.url): resumed \(next.loginReply["resumed"]?.boolValue == true)") }
                        if next.loginReply["resumed"]?.boolValue != true {
                            _ = try join(on: session)
                        }
                        continue
                    }
                    if live { Output.raw(RosterView.showCursor) }
                    Output.fail("connection closed: \(info)", code: info.code == 1000 ? 0 : 4)
                }
                continue
            }
            if global.json { Output.line(event.description) }
            var changes: [RosterChange] = []
            var outcome = model.apply(event) { changes.append($0) }
            if outcome == .ignored { continue }
            while outcome != .applied {
                var read: JSONObject = ["channel": .string(channel), "channelType": channelType(stream), "includeState": true, "pageSize": 1000]
                if case .fetchPage(let page) = outcome { read["page"] = .string(page) }
                let users = try session.call(.getOnlineUsers, .object(read))
                let list = users["users"]?.arrayValue ?? [], next = users["nextPage"]?.stringValue
                if case .needsResync = outcome {
                    outcome = model.resync(users: list, seq: users["seq"]?.numberValue?.intValue, nextPage: next)
                    changes.append(.replaced(members: model.count))
                } else {
                    outcome = model.merge(page: list, nextPage: next)
                }
            }
            changes.removeAll { if case .unexpected = $0 { true } else { false } }
            if changes.isEmpty { continue }
            if global.json { continue }
            let clock = style.dim("[\(Output.time(event["timestamp"]?.numberValue?.intValue).suffix(13))]")
            let lines = changes.map { "\(clock) \(RosterView.describe($0, in: model, style: style, showState: state))" }
            if live {
                recentLines = Array((recentLines + lines).suffix(recent))
                Output.raw(RosterView.screen(model, recent: recentLines, style: style, showState: state, maxMembers: maxMembers))
            } else {
                for line in lines { Output.line(line) }
                Output.line("  " + RosterView.summary(model, style: style, showState: state))
            }
        }
        if live { Output.raw(RosterView.showCursor) }
        if !global.json { Output.line("\(style.yellow("leaving")) \(channel): " + RosterView.summary(model, style: style, showState: state)) }
        session.finish()
    }
}

extension Watch {
    /// Joins the watched channel with presence events on and messages off.
    func join(on session: Session) throws -> Reply {
        try session.call(.join, [
            "channel": .string(channel), "channelType": channelType(stream), "presence": true, "messages": false,
        ])
    }

    /// Close codes after which watching stops: logout, bad token, session limit, disconnected
    /// by the server.
    static func isFinal(_ code: UInt16?) -> Bool {
        guard let code else { return false }
        return [1000, 1003, 1007, 1009, 4401, 4403, 4408, 4409].contains(code)
    }

    /// After a 1012: a new login (no resume: none can succeed), on the same URL first and then
    /// the others, a few rounds with growing pauses while the cluster forms again; nil when
    /// none answers.
    func logInAgain(after old: Session, interrupted: InterruptFlag) -> Session? {
        let urls = global.urls.isEmpty ? [global.url] : global.urls
        let start = urls.firstIndex(of: old.url) ?? 0
        var pause = 0.05
        for attempt in 0..<(urls.count * 8) where !interrupted.isSet {
            if let fresh = (try? Session.openQuietly(global, url: urls[(start + attempt) % urls.count])) ?? nil {
                return fresh
            }
            Thread.sleep(forTimeInterval: pause)  // backoff between login attempts, not a test wait
            pause = min(2, pause * 2)
        }
        return nil
    }

    /// How long watch keeps trying to resume before it settles for a new session. A node
    /// killed abruptly (kill -9) keeps its sessions live until it has missed 2.5 heartbeats
    /// (PROTOCOL §9; 2.5 s with the default `cluster.heartbeatSeconds`); a resume before that
    /// answers `resumed: false`.
    static let resumeWindowSeconds = 5.0

    /// Tries every `--url` in turn, starting after the one that went away, a few rounds with
    /// growing pauses; the resumed session, or, when no resume succeeded within
    /// ``resumeWindowSeconds``, a fresh one; nil when no URL answers.
    func reconnect(_ old: Session, interrupted: InterruptFlag) -> Session? {
        let urls = global.urls.isEmpty ? [global.url] : global.urls
        let start = (urls.firstIndex(of: old.url) ?? 0) + 1
        let resumeUntil = Date().addingTimeInterval(Self.resumeWindowSeconds)
        // A login that did not resume: kept in reserve (it joined nothing, so nobody saw it).
        var fresh: Session?
        var pause = 0.05
        for attempt in 0..<(urls.count * 6) where !interrupted.isSet {
            let url = urls[(start + attempt) % urls.count]
            if let next = old.resumed(on: url) {
                if next.loginReply["resumed"]?.boolValue == true {
                    fresh?.finish()
                    return next
                }
                if fresh == nil { fresh = next } else { next.finish() }
            } else if fresh == nil {
                fresh = (try? Session.openQuietly(global, url: url)) ?? nil
            }
            if let fresh, Date() >= resumeUntil { return fresh }
            Thread.sleep(forTimeInterval: pause)  // backoff between reconnect attempts, not a test wait
            pause = min(2, pause * 2)
        }
        return fresh
    }
}

/// Text for `watch`: change lines, the one-line summary and the full-screen roster.
enum RosterView {
    static let clearScreen = "\u{1B}[H\u{1B}[2J"
    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"

    /// `join bob mood=happy`, `leave bob`, `timeout bob`, `snapshot: 3 member(s)`.
    static func describe(_ change: RosterChange, in model: Roster, style: Style, showState: Bool) -> String {
        switch change {
        case .replaced(let count): "\(style.presenceType("snapshot")): \(count) member(s)"
        case .joined(let id): "\(style.presenceType("join")) \(style.bold(id))" + (showState ? " \(stateText(model.members[id]))" : "")
        case .left(let id): "\(style.presenceType("leave")) \(style.bold(id))"
        case .timedOut(let id): "\(style.presenceType("timeout")) \(style.bold(id))"
        case .stateChanged(let id): "\(style.presenceType("stateChanged")) \(style.bold(id)) \(stateText(model.members[id]))"
        case .unexpected(let what): style.dim(what)
        }
    }

    /// A member's state as `{k: v}` text.
    static func stateText(_ member: RosterMember?) -> String {
        let pairs = (member?.state ?? [:]).sorted { $0.key < $1.key }.map { (key: $0.key, value: JSON.string($0.value)) }
        return Output.state(.object(JSONObject(pairs)))
    }

    /// `roster: 3 member(s), occupancy 3, mode announce, seq 7: alice, bob, carol`
    /// (at most 20 names).
    static func summary(_ model: Roster, style: Style, showState: Bool) -> String {
        let roster = model.sortedMembers
        var names = roster.prefix(20).map { style.bold($0.userId) + (showState ? " (\(stateText($0)))" : "") }
        if roster.count > 20 { names.append("… \(roster.count - 20) more") }
        return "roster: \(roster.count) member(s), occupancy \(model.occupancy), mode \(modeText(model.mode, style)), seq \(model.seq.map(String.init) ?? "?")"
            + (names.isEmpty ? "" : ": " + names.joined(separator: ", "))
    }

    /// The whole terminal screen: header, members, recent events.
    static func screen(_ model: Roster, recent: [String], style: Style, showState: Bool, maxMembers: Int) -> String {
        var lines = [
            "\(style.bold(model.channel))  mode \(modeText(model.mode, style))  occupancy \(style.bold(String(model.occupancy)))  seq \(model.seq.map(String.init) ?? "?")  \(style.dim("(Ctrl-C to leave)"))",
            "",
        ]
        let roster = model.sortedMembers
        for member in roster.prefix(maxMembers) {
            lines.append("  \(style.green("●")) \(style.bold(member.userId))" + (showState ? "  \(style.dim(stateText(member)))" : ""))
        }
        if roster.count > maxMembers { lines.append(style.dim("  … and \(roster.count - maxMembers) more")) }
        if roster.isEmpty { lines.append(style.dim("  (nobody)")) }
        if !recent.isEmpty {
            lines.append("")
            lines.append(style.dim("recent:"))
            lines += recent.map { "  " + $0 }
        }
        return hideCursor + clearScreen + lines.joined(separator: "\n") + "\n"
    }

    private static func modeText(_ mode: String, _ style: Style) -> String {
        mode == "interval" ? style.yellow(mode) : style.green(mode)
    }
}
