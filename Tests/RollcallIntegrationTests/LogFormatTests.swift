import Foundation
import RollcallProtocol
import Testing

/// `log.format` (PROTOCOL §8, 1.2) on the real binary: with `json` every line it writes, on
/// stdout and stderr (lws' own lines included), is one JSON object with `ts`, `level`, `msg`
/// and the message's fields, the `listening on` announcement too; `text` is unchanged.
@Suite("Log format")
struct LogFormatTests {
    /// Every non-empty line of `text`.
    private func lines(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }

    @Test("json: every stdout and stderr line is a JSON object with ts, level, msg; metadata as fields")
    func jsonLines() throws {
        let broker = try BrokerProcess(config: ["log": ["level": "debug", "format": "json"]])
        let alice = try broker.session("alice")
        #expect(try alice.request("join", ["channel": "lobby"]).ok)
        alice.close()
        let exit = try #require(broker.stop(timeout: 10))
        #expect(exit.status == 0 && !exit.signaled)

        let stdout = lines(broker.stdoutText)
        #expect(stdout.count == 1, "\(stdout)")
        let announcement = try JSONParser.parse(Array((stdout.first ?? "").utf8))
        #expect(announcement["msg"]?.stringValue == "listening on 127.0.0.1:\(broker.port)")
        #expect(announcement["level"]?.stringValue == "info")

        let stderr = lines(broker.stderrText)
        #expect(stderr.count >= 2, "debug logs something: \(stderr)")
        let timestamp = try Regex(#"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"#)
        var objects: [JSON] = []
        for line in stderr {
            guard let object = try? JSONParser.parse(Array(line.utf8)), object.objectValue != nil else {
                Issue.record("not a JSON object: \(line)")
                continue
            }
            objects.append(object)
            #expect(object["ts"]?.stringValue.map { $0.wholeMatch(of: timestamp) != nil } == true, "\(line)")
            #expect(object["level"]?.stringValue != nil && object["msg"]?.stringValue != nil, "\(line)")
        }
        let stopped = objects.first { $0["msg"]?.stringValue == "stopped" }
        #expect(stopped?["connectionsLeft"]?.stringValue == "0", "metadata become fields: \(String(describing: stopped))")
        #expect(objects.contains { $0["logger"]?.stringValue == "rollcall.lws" }, "lws' own lines are JSON too")
    }

    @Test("text (the default): the announcement is the bare line and logs are not JSON")
    func textLines() throws {
        let broker = try BrokerProcess(config: ["log": ["level": "info"]])
        let exit = try #require(broker.stop(timeout: 10))
        #expect(exit.status == 0)
        #expect(lines(broker.stdoutText) == ["listening on 127.0.0.1:\(broker.port)"])
        let stopped = lines(broker.stderrText).filter { $0.contains("stopped") }
        #expect(!stopped.isEmpty && stopped.allSatisfy { !$0.hasPrefix("{") && $0.contains("connectionsLeft=0") }, "\(stopped)")
    }
}
