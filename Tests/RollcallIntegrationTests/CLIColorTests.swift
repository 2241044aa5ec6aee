import Foundation
import RollcallTestSupport
import Testing

/// Colours: on for a terminal (`auto`) or `--color always`; off for a pipe, `NO_COLOR`,
/// `--color never` and `--json`.
extension CLITests {
    static let escape = "\u{1B}["

    /// Runs the CLI on a pseudo-terminal through `script(1)`, with `TERM=xterm`, without the
    /// test runner's `NO_COLOR`, and with extra environment entries.
    func cliOnTerminal(_ arguments: [String], environment: [String] = []) throws -> String {
        func quoted(_ word: String) -> String { "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = ([Self.cliBinary] + arguments).map(quoted).joined(separator: " ")
        let child = try ChildProcess(executable: "/usr/bin/env", arguments: ["-u", "NO_COLOR", "TERM=xterm"] + environment + ["script", "-qec", command, "/dev/null"],
                                     directory: BrokerProcess.packageRoot.path)
        let output = child.output
        let status = try #require(child.waitForExit(timeout: 20), "script did not exit")
        output.waitForEOF(timeout: 5)
        #expect((status >> 8) & 0xff == 0, "\(output.stdoutText) \(output.stderrText)")
        return output.stdoutText
    }

    @Test("--color always emits ANSI codes; a pipe, --color never and --json emit none")
    func colorOnPipe() throws {
        let broker = try BrokerProcess()
        let base = ["--url", broker.url(), "--user", "alice"]
        let forced = try cli(base + ["--color", "always", "ping"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(forced.stdout.contains("\(Self.escape)32mpong\(Self.escape)0m"), "\(forced.stdout)")
        let piped = try cli(base + ["ping"])
        #expect(piped.stdout.hasPrefix("pong from"), "\(piped.stdout)")
        #expect(!piped.stdout.contains(Self.escape))
        let json = try cli(base + ["--color", "always", "--json", "ping"])
        #expect(!json.stdout.contains(Self.escape), "--json stays raw JSON")
        let bad = try cli(base + ["--color", "sometimes", "ping"])
        #expect(bad.status != 0)
    }

    @Test("on a terminal, auto colours unless NO_COLOR is set or --color never")
    func colorOnTerminal() throws {
        let broker = try BrokerProcess()
        let base = ["--url", broker.url(), "--user", "alice", "ping"]
        let auto = try cliOnTerminal(base)
        #expect(auto.contains("\(Self.escape)32mpong"), "\(auto.debugDescription)")
        let noColor = try cliOnTerminal(base, environment: ["NO_COLOR=1"])
        #expect(noColor.contains("pong from"), "\(noColor)")
        #expect(!noColor.contains(Self.escape), "\(noColor)")
        let never = try cliOnTerminal(base + ["--color", "never"])
        #expect(never.contains("pong from"), "\(never)")
        #expect(!never.contains(Self.escape), "\(never)")
    }
}
