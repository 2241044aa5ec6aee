import Foundation
import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// `rollcall-cli status get|set|clear|watch|subs` against the real broker.
@Suite("rollcall-cli status")
struct UserStatusCLITests {
    let runner = CLITests()

    func cli(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try runner.cli(arguments)
    }

    @Test("status set / get / clear: human output and --json")
    func setGetClear() throws {
        let broker = try BrokerProcess(config: UserStatusTests.relaxedRates)
        let set = try cli(["status", "set", "Out to lunch", "--url", broker.url(), "--user", "bob"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("custom status of bob: \"Out to lunch\""), "\(set.stdout)")

        let get = try cli(["--url", broker.url(), "--user", "alice", "status", "get", "bob", "zoe"])
        #expect(get.status == 0, "\(get.stderr)")
        let lines = get.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(get.stdout)")
        #expect(lines.first?.hasPrefix("bob: loggedOut, \"Out to lunch\" (since ") == true, "the CLI logged out after setting: \(get.stdout)")
        #expect(lines.last == "zoe: loggedOut (never seen)")

        let json = try cli(["status", "get", "bob", "--url", broker.url(), "--user", "alice", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let line = try #require(json.stdout.split(separator: "\n").first)
        let reply = Reply(try #require(try JSONParser.parse(String(line)).objectValue))
        #expect(reply.ok)
        #expect(reply.status(of: "bob")?.customStatusText == "Out to lunch")

        let clear = try cli(["status", "clear", "--url", broker.url(), "--user", "bob"])
        #expect(clear.status == 0, "\(clear.stderr)")
        #expect(clear.stdout.contains("custom status of bob cleared"))
        let online = try broker.session("bob", platform: "ios")
        let after = try cli(["status", "get", "bob", "--url", broker.url(), "--user", "alice"])
        #expect(after.stdout.hasPrefix("bob: online on ios (since "), "\(after.stdout)")
        _ = online
    }

    @Test("status set: an error reply exits 1 and names the code; invalid ids are reported by get")
    func errors() throws {
        let broker = try BrokerProcess()
        let tooLong = try cli(["status", "set", String(repeating: "x", count: 65), "--url", broker.url(), "--user", "bob"])
        #expect(tooLong.status == 1)
        #expect(tooLong.stderr.contains("CUSTOM_STATUS_TOO_LONG"), "\(tooLong.stderr)")
        // Regression: an error reply used to exit without a logout, leaving bob online (held
        // session of platform cli) for presence.timeoutSeconds.
        let dave = try broker.session("dave", platform: "web")
        #expect(try dave.userStatus(of: "bob").statusText == "loggedOut", "the failed CLI call logged out")
        let self_ = try cli(["status", "watch", "bob", "--for", "0.5", "--url", broker.url(), "--user", "bob"])
        #expect(self_.status == 1)
        #expect(self_.stderr.contains("CANNOT_SUBSCRIBE_SELF"), "\(self_.stderr)")
        let missing = try cli(["status", "get", "--url", broker.url()])
        #expect(missing.status != 0, "no user named")
    }

    @Test("status watch prints current status and changes until SIGINT, then unsubscribes")
    func watchUntilInterrupted() throws {
        let broker = try BrokerProcess()
        let child = try ChildProcess(executable: CLITests.cliBinary,
                                     arguments: ["status", "watch", "bob", "--url", broker.url(), "--user", "sam"],
                                     directory: BrokerProcess.packageRoot.path)
        let output = child.output
        defer { if child.status == nil { child.send(SIGKILL) } }
        let head = output.waitForStdoutLine(prefix: "watching ", timeout: 20)
        #expect(head == "1 user(s) as sam (Ctrl-C to stop)", "stdout: \(output.stdoutText) stderr: \(output.stderrText)")
        #expect(output.waitForStdoutLine(prefix: "bob: ", timeout: 5) == "loggedOut (never seen)")

        let bob = try broker.session("bob", platform: "ios", customStatus: "Hi")
        #expect(eventually(timeout: 10) { output.stdoutText.contains("] bob: online on ios, \"Hi\" (since ") }, "\(output.stdoutText)")
        bob.close()
        #expect(eventually(timeout: 10) { output.stdoutText.contains("] bob: offline, \"Hi\" (since ") }, "\(output.stdoutText)")

        child.send(SIGINT)
        let status = try #require(child.waitForExit(timeout: 10), "watch did not stop on SIGINT")
        output.waitForEOF(timeout: 5)
        #expect((status & 0x7f) == 0 && (status >> 8) & 0xff == 0, "exit status \(status)")
        #expect(output.stdoutText.hasSuffix("stopped watching\n"))
        let sam = try broker.session("sam", platform: "web")
        #expect(try sam.request("getSubscriptions")["subscriptions"]?.arrayValue?.isEmpty == true,
                "the subscription made by watch is removed at exit")
    }

    @Test("status watch --for stops by itself; --json prints the reply and raw events; existing subscriptions are kept")
    func watchForJSON() throws {
        let broker = try BrokerProcess()
        let sam = try broker.session("sam", platform: "web")
        #expect(try sam.subscribe(["bob"], duration: 600).ok)
        let result = try cli(["status", "watch", "bob", "carol", "--for", "1", "--duration", "120", "--json",
                              "--url", broker.url(), "--user", "sam"])
        #expect(result.status == 0, "\(result.stderr)")
        let first = try #require(result.stdout.split(separator: "\n").first)
        let reply = Reply(try #require(try JSONParser.parse(String(first)).objectValue))
        #expect(reply.ok)
        #expect(Set(reply.statuses.compactMap(\.userIdText)) == ["bob", "carol"])
        // sam's web session saw the CLI subscribe carol and, at exit, unsubscribe only carol.
        let added = try sam.waitForSubscriptionsEvent()
        #expect(added.added == ["carol"], "bob was a renewal")
        let removed = try sam.waitForSubscriptionsEvent()
        #expect(removed.removed == ["carol"])
        let kept = try sam.request("getSubscriptions")
        #expect((kept["subscriptions"]?.arrayValue ?? []).map { $0.userIdText } == ["bob"])
    }

    @Test("status subs lists every subscription, following pages")
    func subscriptions() throws {
        let broker = try BrokerProcess()
        let alice = try broker.session("alice", platform: "web")
        #expect(try alice.subscribe(["carol", "bob", "dave"]).ok)
        let human = try cli(["status", "subs", "--page-size", "2", "--url", broker.url(), "--user", "alice"])
        #expect(human.status == 0, "\(human.stderr)")
        let lines = human.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "alice subscribes to 3 user(s)", "\(human.stdout)")
        #expect(lines.dropFirst().map { $0.split(separator: ":").first.map(String.init) } == ["  bob", "  carol", "  dave"])
        #expect(lines.dropFirst().allSatisfy { $0.contains("; expires ") })

        let json = try cli(["status", "subs", "--page-size", "2", "--json", "--url", broker.url(), "--user", "alice"])
        #expect(json.status == 0)
        let pages = json.stdout.split(separator: "\n")
        #expect(pages.count == 2, "two pages of at most 2: \(json.stdout)")
    }

    @Test("every status command has --help")
    func help() throws {
        for command in [["status"], ["status", "get"], ["status", "set"], ["status", "clear"], ["status", "watch"], ["status", "subs"]] {
            let result = try cli(command + ["--help"])
            #expect(result.status == 0, "\(command)")
            #expect(result.stdout.contains("USAGE"), "\(command): \(result.stdout)")
        }
        let top = try cli(["--help"])
        #expect(top.stdout.contains("status"))
    }
}
