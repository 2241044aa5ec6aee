import Testing
import RollcallProtocol
@testable import RollcallCore

/// Numbers beyond `Double`'s range are numbers of the right JSON type: out of range
/// (`INVALID_ARGUMENT`) or clamped, never `INVALID_REQUEST` (found by the hostile-input table).
@Suite("Huge numbers in arguments")
struct HugeNumberTests {
    static let fourHundredDigits = "9" + String(repeating: "0", count: 399)

    @Test("presenceTimeout 1e400 clamps to 300, -1e400 to 5")
    func presenceTimeoutClamps() {
        let bench = SessionTestBench()
        let high = bench.sendRaw(#"{"id":1,"op":"login","userId":"a","presenceTimeout":1e400}"#, on: bench.open()).first
        #expect(high?["result"]?["presenceTimeout"] == 300, "\(String(describing: high))")
        let low = bench.sendRaw(#"{"id":1,"op":"login","userId":"b","presenceTimeout":-1e400}"#, on: bench.open()).first
        #expect(low?["result"]?["presenceTimeout"] == 5, "\(String(describing: low))")
    }

    @Test("pageSize and duration beyond Double's range are INVALID_ARGUMENT",
          arguments: [
              #""op":"getOnlineUsers","channel":"c","pageSize":1e400"#,
              #""op":"getOnlineUsers","channel":"c","pageSize":-1e400"#,
              #""op":"getOnlineUsers","channel":"c","pageSize":"# + fourHundredDigits,
              #""op":"getSubscriptions","pageSize":1e999"#,
              #""op":"subscribeUserStatus","userIds":["b"],"duration":1e400"#,
          ])
    func outOfRange(_ request: String) {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        let reply = bench.sendRaw("{\"id\":7," + request + "}", on: connection).first
        #expect(reply?["error"]?["code"] == "INVALID_ARGUMENT", "\(String(describing: reply))")
        #expect(reply?["id"] == 7)
    }

    @Test("a wrong JSON type is still INVALID_REQUEST")
    func wrongType() {
        let bench = SessionTestBench()
        let (connection, _) = bench.login("alice")
        let reply = bench.sendRaw(#"{"id":7,"op":"getOnlineUsers","channel":"c","pageSize":"1e400"}"#, on: connection).first
        #expect(reply?["error"]?["code"] == "INVALID_REQUEST")
    }
}
