import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// `rollcall-cli watch` in line mode (stdout is a pipe, not a terminal): one line per change
/// and a roster summary after each, built from snapshot + events + interval lists.
extension CLITests {
    @Test("watch shows other clients' joins, leaves and state; Ctrl-C leaves cleanly with the final roster")
    func watchLineMode() throws {
        let broker = try BrokerProcess()
        let running = try startCLI(["--url", broker.url(), "--user", "alice", "watch", "lobby", "--state"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        #expect(running.waitForOutput("roster: 1 member(s), occupancy 1, mode announce, seq 1: alice"),
                "\(running.output.stdoutText)\n\(running.output.stderrText)")

        let bob = try broker.session("bob")
        #expect(try bob.join("lobby", state: ["mood": "happy"]).ok)
        #expect(running.waitForOutput("join bob mood=happy"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput("roster: 2 member(s), occupancy 2, mode announce, seq 2: alice ({}), bob (mood=happy)"),
                "\(running.output.stdoutText)")
        let carol = try broker.session("carol")
        #expect(try carol.join("lobby").ok)
        #expect(try bob.channelOp("publish", "lobby", ["message": "not shown"]).ok)
        #expect(try bob.channelOp("leave", "lobby").ok)
        #expect(running.waitForOutput("leave bob"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput("roster: 2 member(s), occupancy 2, mode announce, seq 4: alice ({}), carol ({})"),
                "\(running.output.stdoutText)")

        running.child.send(SIGINT)
        let status = try #require(running.child.waitForExit(timeout: 10), "watch did not exit after SIGINT")
        #expect(status & 0x7f == 0, "not killed by a signal")
        #expect((status >> 8) & 0xff == 0)
        running.output.waitForEOF(timeout: 5)
        let text = running.output.stdoutText
        #expect(text.contains("leaving lobby: roster: 2 member(s), occupancy 2"), "\(text)")
        #expect(!text.contains("not shown"), "messages are off")
        #expect(!text.contains("\u{1B}["), "no ANSI codes when stdout is not a terminal")
        #expect(try carol.presenceEvent("leave", channel: "lobby", publisher: "alice")["occupancy"]?.numberValue?.intValue == 1)
    }

    @Test("watch applies interval lists (join, leave, stateChanged): the roster and occupancy stay right in interval mode")
    func watchIntervalMode() throws {
        let broker = try BrokerProcess(config: ["presence": ["maxInstantEvents": 2, "hysteresis": 1, "intervalSeconds": 0.2]])
        let running = try startCLI(["--url", broker.url(), "--user", "alice", "watch", "hall", "--state"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        #expect(running.waitForOutput("roster: 1 member(s), occupancy 1"), "\(running.output.stdoutText)\n\(running.output.stderrText)")

        var others: [RollcallConnection] = []
        for name in ["u1", "u2", "u3", "u4"] {
            let connection = try broker.session(name)
            #expect(try connection.join("hall", state: name == "u4" ? ["seat": "4"] : nil).ok)
            others.append(connection)
        }
        #expect(running.waitForOutput("roster: 5 member(s), occupancy 5, mode interval"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput("u4 (seat=4)"), "\(running.output.stdoutText)")

        for connection in others.prefix(3) { #expect(try connection.channelOp("leave", "hall").ok) }
        #expect(try others[3].channelOp("setState", "hall", ["state": ["seat": "9"]]).ok)
        #expect(running.waitForOutput("roster: 2 member(s), occupancy 2, mode interval"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput(": alice ({}), u4 (seat=9)"), "\(running.output.stdoutText)")

        running.child.send(SIGINT)
        #expect(running.child.waitForExit(timeout: 10) != nil)
        running.output.waitForEOF(timeout: 5)
        #expect(running.output.stdoutText.contains("leaving hall: roster: 2 member(s), occupancy 2"), "\(running.output.stdoutText)")
    }

    @Test("watch completes a truncated snapshot with getOnlineUsers pages")
    func watchTruncatedSnapshot() throws {
        let broker = try BrokerProcess(config: ["presence": ["snapshotMaxMembers": 2]])
        var members: [RollcallConnection] = []
        for name in ["m1", "m2", "m3", "m4", "m5"] {
            let connection = try broker.session(name)
            #expect(try connection.join("big", presence: false, state: ["n": name]).ok)
            members.append(connection)
        }
        let running = try startCLI(["--url", broker.url(), "--user", "alice", "watch", "big", "--state"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        #expect(running.waitForOutput("snapshot: 2 member(s)"), "\(running.output.stdoutText)\n\(running.output.stderrText)")
        #expect(running.waitForOutput("roster: 6 member(s), occupancy 6, mode announce"), "\(running.output.stdoutText)")
        #expect(running.waitForOutput(": alice ({}), m1 (n=m1), m2 (n=m2), m3 (n=m3), m4 (n=m4), m5 (n=m5)"), "\(running.output.stdoutText)")
        running.child.send(SIGINT)
        #expect(running.child.waitForExit(timeout: 10) != nil)
    }
}
