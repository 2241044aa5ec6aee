import Foundation
import Logging
import RollcallProtocol
@testable import RollcallServer
import Testing

@Suite("JSONLogLine")
struct JSONLogLineTests {
    @Test("ts, level, msg and logger come first; metadata follow as fields, nested values as JSON")
    func fields() throws {
        let line = JSONLogLine.encode(
            level: .warning, message: "cluster: Redis unreachable", label: "rollcall",
            metadata: ["error": "refused", "count": .stringConvertible(3), "tags": ["a", "b"], "peer": ["host": "h"]],
            at: Date(timeIntervalSince1970: 1_795_000_000.1234))
        #expect(line.hasPrefix(#"{"ts":"2026-11-18T11:06:40.123Z","level":"warning","msg":"cluster: Redis unreachable","logger":"rollcall","#))
        let object = try JSONParser.parse(Array(line.utf8))
        #expect(object["error"]?.stringValue == "refused")
        #expect(object["count"]?.stringValue == "3")
        #expect(object["tags"] == .array([.string("a"), .string("b")]))
        #expect(object["peer"]?["host"]?.stringValue == "h")
    }

    @Test("a message with a newline stays on one line; a metadata key named like a reserved field gets a leading _")
    func oneLineAndReservedKeys() throws {
        let line = JSONLogLine.encode(level: .info, message: "two\nlines \"quoted\"", label: "x", metadata: ["msg": "shadow", "level": "0"])
        #expect(!line.contains("\n"))
        let object = try JSONParser.parse(Array(line.utf8))
        #expect(object["msg"]?.stringValue == "two\nlines \"quoted\"")
        #expect(object["_msg"]?.stringValue == "shadow")
        #expect(object["level"]?.stringValue == "info" && object["_level"]?.stringValue == "0")
    }

    @Test("timestamps are UTC with three-digit milliseconds, zero-padded")
    func timestamps() {
        #expect(JSONLogLine.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(JSONLogLine.timestamp(Date(timeIntervalSince1970: 1_000_000_000.0075)) == "2001-09-09T01:46:40.007Z")
    }
}
