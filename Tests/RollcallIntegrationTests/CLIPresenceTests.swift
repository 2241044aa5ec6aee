import Foundation
import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// The presence commands of `rollcall-cli` against the real broker: join (stays joined,
/// prints events, leaves on SIGINT), who, where, state set/rm/get, publish, and --help.
extension CLITests {
    /// A CLI process left running (`join`), with its output collected.
    struct RunningCLI {
        let child: ChildProcess
        let output: OutputCollector

        /// Waits until stdout contains `text`.
        func waitForOutput(_ text: String, timeout: TimeInterval = 10) -> Bool {
            eventually(timeout: timeout) { output.stdoutText.contains(text) }
        }
    }

    /// Starts the CLI without waiting for it to exit.
    func startCLI(_ arguments: [String]) throws -> RunningCLI {
        let child = try ChildProcess(executable: Self.cliBinary, arguments: arguments, directory: BrokerProcess.packageRoot.path)
        let output = child.output
        return RunningCLI(child: child, output: output)
    }

    @Test("join stays joined, prints the snapshot, presence events and messages; SIGINT leaves and exits 0")
    func joinPrintsEventsUntilInterrupted() throws {
        let broker = try BrokerProcess()
        let running = try startCLI(["--url", broker.url(), "--user", "alice", "join", "lobby", "--state", "mood=happy", "seat=A1"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        #expect(running.waitForOutput("joined lobby as alice: occupancy 1, mode announce"), "\(running.output.stdoutText)\n\(running.output.stderrText)")
        #expect(running.waitForOutput("lobby snapshot: 1 member(s)"))
        #expect(running.waitForOutput("alice mood=happy, seat=A1"))

        let bob = try broker.session("bob")
        #expect(try bob.join("lobby", state: ["role": "guest"]).ok)
        #expect(running.waitForOutput("lobby join bob role=guest (occupancy 2)"), "\(running.output.stdoutText)")
        #expect(try bob.channelOp("setState", "lobby", ["state": ["role": "host"]]).ok)
        #expect(running.waitForOutput("lobby stateChanged bob role=host (occupancy 2)"), "\(running.output.stdoutText)")
        #expect(try bob.channelOp("publish", "lobby", ["message": "hello there"])["recipients"]?.numberValue?.intValue == 1)
        #expect(running.waitForOutput("lobby <bob> hello there"), "\(running.output.stdoutText)")
        #expect(try bob.channelOp("getState", "lobby", ["userId": "alice"])["state"] == ["mood": "happy", "seat": "A1"])

        running.child.send(SIGINT)
        let status = try #require(running.child.waitForExit(timeout: 10), "join did not exit after SIGINT")
        #expect(status & 0x7f == 0, "not killed by a signal")
        #expect((status >> 8) & 0xff == 0)
        running.output.waitForEOF(timeout: 5)
        #expect(running.output.stdoutText.contains("leaving lobby"))
        #expect(try bob.presenceEvent("leave", channel: "lobby", publisher: "alice")["occupancy"]?.numberValue?.intValue == 1)
    }

    @Test("join --stream --no-presence --json prints raw JSON lines")
    func joinStreamJSON() throws {
        let broker = try BrokerProcess()
        let running = try startCLI(["join", "scores", "--stream", "--no-presence", "--json", "--url", broker.url(), "--user", "alice"])
        defer { if running.child.status == nil { running.child.send(SIGKILL) } }
        #expect(running.waitForOutput("\"mode\":\"announce\""), "\(running.output.stderrText)")
        let bob = try broker.session("bob")
        #expect(try bob.join("scores", stream: true).ok)
        #expect(try bob.channelOp("publish", "scores", stream: true, ["message": ["goal": 1]]).ok)
        #expect(running.waitForOutput("\"message\":{\"goal\":1}"), "\(running.output.stdoutText)")
        running.child.send(SIGINT)
        #expect(running.child.waitForExit(timeout: 10) != nil)
        running.output.waitForEOF(timeout: 5)
        let lines = running.output.stdoutText.split(separator: "\n")
        for line in lines { #expect((try? JSONParser.parse(String(line)))?.objectValue != nil, "not JSON: \(line)") }
        #expect(!running.output.stdoutText.contains("\"type\":\"join\""), "--no-presence: no presence events")
    }

    @Test("who --all --state follows nextPage; who without --all points to the next page")
    func who() throws {
        let broker = try BrokerProcess()
        var members: [RollcallConnection] = []
        for name in ["dave", "alice", "carol", "bob", "erin"] {
            let connection = try broker.session(name)
            #expect(try connection.join("hall", presence: false, state: ["n": name]).ok)
            members.append(connection)
        }
        let all = try cli(["--url", broker.url(), "--user", "viewer", "who", "hall", "--all", "--state", "--page-size", "2"])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout == """
            5 user(s) in hall
              alice n=alice
              bob n=bob
              carol n=carol
              dave n=dave
              erin n=erin

            """, "\(all.stdout)")
        let first = try cli(["--url", broker.url(), "--user", "viewer", "who", "hall", "--page-size", "2"])
        #expect(first.status == 0)
        #expect(first.stdout.hasPrefix("5 user(s) in hall\n  alice\n  bob\n  … more (nextPage "), "\(first.stdout)")
        let empty = try cli(["--url", broker.url(), "--user", "viewer", "who", "nowhere", "--stream"])
        #expect(empty.stdout == "0 user(s) in nowhere\n", "\(empty.stdout)")
        let bad = try cli(["--url", broker.url(), "--user", "viewer", "who", "hall", "--page-size", "0"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("INVALID_ARGUMENT"))
    }

    @Test("where lists a user's channels")
    func whereCommand() throws {
        let broker = try BrokerProcess()
        let bob = try broker.session("bob")
        #expect(try bob.join("lobby").ok)
        #expect(try bob.join("scores", stream: true).ok)
        let result = try cli(["--url", broker.url(), "--user", "viewer", "where", "bob"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "bob is in 2 channel(s)\n  lobby (message)\n  scores (stream)\n", "\(result.stdout)")
        let json = try cli(["--url", broker.url(), "--user", "viewer", "--json", "where", "nobody"])
        #expect(json.stdout.contains("\"totalChannel\":0"))
    }

    @Test("state set / rm / get change the state of a user who is in the channel through another session")
    func stateCommands() throws {
        let broker = try BrokerProcess()
        let alice = try broker.session("alice")
        #expect(try alice.join("lobby").ok)
        let watcher = try broker.session("watcher")
        #expect(try watcher.join("lobby").ok)
        let base = ["--url", broker.url(), "--user", "alice"]

        let set = try cli(base + ["state", "set", "lobby", "mood=happy", "seat=A1"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout == "state in lobby: mood=happy, seat=A1\n", "\(set.stdout)")
        #expect(try watcher.presenceEvent("stateChanged", channel: "lobby", publisher: "alice")["state"] == ["mood": "happy", "seat": "A1"])

        let removed = try cli(base + ["state", "rm", "lobby", "seat"])
        #expect(removed.stdout == "state in lobby: mood=happy\n", "\(removed.stdout)")
        #expect(try watcher.presenceEvent("stateChanged", channel: "lobby", publisher: "alice")["state"] == ["mood": "happy"])

        let read = try cli(["--url", broker.url(), "--user", "watcher", "state", "get", "lobby", "alice"])
        #expect(read.stdout == "alice in lobby: mood=happy\n", "\(read.stdout)")
        let missing = try cli(["--url", broker.url(), "--user", "watcher", "state", "get", "lobby", "nobody"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("USER_NOT_PRESENT"))

        // Not a member: the broker holds it for a join that never comes, and the CLI says so.
        let pending = try cli(["--url", broker.url(), "--user", "carol", "state", "set", "lobby", "k=v"])
        #expect(pending.stdout.contains("pending"), "\(pending.stdout)")
        let malformed = try cli(base + ["state", "set", "lobby", "novalue"])
        #expect(malformed.status != 0)
        #expect(malformed.stderr.contains("key=value"))
    }

    @Test("publish sends JSON when the message parses, else a string; stream needs membership")
    func publishCommand() throws {
        let broker = try BrokerProcess()
        let alice = try broker.session("alice")
        #expect(try alice.join("lobby").ok)
        let base = ["--url", broker.url(), "--user", "bob"]
        let object = try cli(base + ["publish", "lobby", "{\"text\":\"hi\",\"n\":2}"])
        #expect(object.status == 0, "\(object.stderr)")
        #expect(object.stdout == "published to lobby: 1 recipient(s)\n", "\(object.stdout)")
        #expect(try alice.messageEvent(channel: "lobby")["message"] == ["text": "hi", "n": 2])
        #expect(try cli(base + ["publish", "lobby", "hello world"]).status == 0)
        #expect(try alice.messageEvent(channel: "lobby")["message"] == "hello world")
        let stream = try cli(base + ["publish", "lobby", "x", "--stream"])
        #expect(stream.status == 1)
        #expect(stream.stderr.contains("NOT_IN_CHANNEL"))
    }

    @Test("every command has --help text", arguments: [
        ["--help"], ["ping", "--help"], ["raw", "--help"], ["join", "--help"], ["who", "--help"],
        ["where", "--help"], ["state", "--help"], ["state", "set", "--help"], ["state", "rm", "--help"],
        ["state", "get", "--help"], ["publish", "--help"], ["watch", "--help"], ["token", "--help"],
        ["status", "--help"], ["status", "get", "--help"], ["status", "set", "--help"], ["status", "clear", "--help"],
        ["status", "watch", "--help"], ["status", "subs", "--help"], ["help", "watch"],
    ])
    func help(arguments: [String]) throws {
        let result = try cli(arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("USAGE:"), "\(result.stdout)")
        #expect(result.stdout.contains("OVERVIEW:"), "\(result.stdout)")
        // Every argument and option line has a description.
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where line.hasPrefix("  <") || line.hasPrefix("  --") {
            // Drop the syntax (`--name`, `<value>`, `-h,`); what remains is the description.
            let words = line.split(separator: " ").drop { $0.hasPrefix("-") || $0.hasPrefix("<") || $0.hasSuffix(",") }
            let described = !words.isEmpty || (index + 1 < lines.count && lines[index + 1].hasPrefix("        "))
            #expect(described, "\(arguments): no help for \(line)")
        }
    }
}

extension CLITests {
    /// The names listed under `SUBCOMMANDS:` of a help text (`help` itself excluded).
    static func subcommands(inHelp text: String) -> [String] {
        guard let start = text.range(of: "SUBCOMMANDS:\n") else { return [] }
        return text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("  ") }
            .compactMap { line -> String? in
                // Continuation lines of a long description start with more than two spaces.
                guard line.dropFirst(2).first.map({ $0 != " " }) == true else { return nil }
                return line.split(separator: " ").first.map(String.init)
            }
            .filter { $0 != "help" }
    }

    @Test("--help of every subcommand, found by walking SUBCOMMANDS, has an overview and described options")
    func helpForEverySubcommand() throws {
        var pending: [[String]] = [[]]
        var visited: [[String]] = []
        while let path = pending.popLast() {
            let result = try cli(path + ["--help"])
            #expect(result.status == 0, "\(path): \(result.stderr)")
            #expect(result.stdout.contains("OVERVIEW:"), "\(path): \(result.stdout)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where line.hasPrefix("  <") || line.hasPrefix("  --") {
                let words = line.split(separator: " ").drop { $0.hasPrefix("-") || $0.hasPrefix("<") || $0.hasSuffix(",") }
                let described = !words.isEmpty || (index + 1 < lines.count && lines[index + 1].hasPrefix("        "))
                #expect(described, "\(path): no help for \(line)")
            }
            visited.append(path)
            pending += Self.subcommands(inHelp: result.stdout).map { path + [$0] }
        }
        let names = Set(visited.map { $0.joined(separator: " ") })
        for expected in ["ping", "raw", "join", "watch", "who", "where", "state set", "state rm", "state get", "publish",
                         "status get", "status set", "status clear", "status watch", "status subs", "token"] {
            #expect(names.contains(expected), "\(expected) not found in help; found \(names.sorted())")
        }
    }
}
