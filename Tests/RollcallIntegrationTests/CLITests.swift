import Foundation
import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// `rollcall-cli` against the real broker.
@Suite("rollcall-cli")
struct CLITests {
    static var cliBinary: String {
        if let path = ProcessInfo.processInfo.environment["ROLLCALL_CLI_BINARY"], !path.isEmpty { return path }
        return BrokerProcess.packageRoot.appendingPathComponent(".build/debug/rollcall-cli").path
    }

    /// Runs the CLI to completion and returns its exit status and output.
    func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try ChildProcess(executable: Self.cliBinary, arguments: arguments, directory: BrokerProcess.packageRoot.path)
        let output = child.output
        let status = try #require(child.waitForExit(timeout: 20), "rollcall-cli did not exit")
        output.waitForEOF(timeout: 5)
        return ((status >> 8) & 0xff, output.stdoutText, output.stderrText)
    }

    @Test("ping with global options before the command prints the server time")
    func ping() throws {
        let broker = try BrokerProcess()
        let result = try cli(["--url", broker.url(), "--user", "alice", "ping"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("server time"))
        #expect(result.stdout.contains("round trip"))
    }

    @Test("--deflate: works with a broker that compresses and with one that does not", arguments: [true, false])
    func deflate(brokerCompresses: Bool) throws {
        let broker = try BrokerProcess(config: ["http": ["permessageDeflate": brokerCompresses]])
        let result = try cli(["--deflate", "--url", broker.url(), "--user", "alice", "raw", "join", #"{"channel":"c","state":{"note":"\#(String(repeating: "x", count: 4000))"}}"#])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("occupancy"), "\(result.stdout)") // the 4 KB join went through (compressed when on)
    }

    @Test("--json ping prints the raw reply; options may follow the command")
    func pingJSON() throws {
        let broker = try BrokerProcess()
        let result = try cli(["ping", "--url", broker.url(), "--user", "alice", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").first)
        let reply = Reply(try #require(try JSONParser.parse(String(line)).objectValue))
        #expect(reply.ok)
        #expect(reply["serverTime"]?.numberValue?.intValue != nil)
    }

    @Test("raw sends any op; an error reply exits 1 and names the code")
    func rawError() throws {
        let broker = try BrokerProcess()
        let ok = try cli(["--url", broker.url(), "raw", "ping"])
        #expect(ok.status == 0)
        #expect(ok.stdout.contains("\"ok\":true"))
        let failed = try cli(["--url", broker.url(), "raw", "teleport", "{\"to\":\"mars\"}"])
        #expect(failed.status == 1)
        #expect(failed.stdout.contains("UNKNOWN_OP"))
        #expect(failed.stderr.contains("UNKNOWN_OP"))
    }

    @Test("an unreachable broker exits 2 with a message")
    func unreachable() throws {
        let broker = try BrokerProcess()
        let url = broker.url()
        _ = broker.stop()
        let result = try cli(["--url", url, "ping"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("cannot connect"))
    }
}
