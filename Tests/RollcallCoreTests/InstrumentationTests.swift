import RollcallProtocol
import Testing
@testable import RollcallCore

/// The core reports each request's op and handling time, and each event's fan-out size.
@Suite("instrumentation")
struct InstrumentationTests {
    final class Recorder: BrokerInstrumentation {
        var requests: [String] = []
        var fanOuts: [Int] = []
        func requestHandled(_ request: RequestLabel, nanoseconds: UInt64) { requests.append(request.text) }
        func eventFannedOut(recipients: Int) { fanOuts.append(recipients) }
    }

    @Test("every request frame is reported with its op; garbage as invalid, unknown names as unknown")
    func requests() {
        let bench = SessionTestBench()
        let recorder = Recorder()
        bench.broker.instrumentation = recorder
        let (connection, _) = bench.login("alice")
        bench.request("ping", on: connection)
        bench.request("join", ["channel": "lobby"], on: connection)
        bench.sendRaw("not json", on: connection)
        bench.request("frobnicate", on: connection)
        #expect(recorder.requests == ["login", "ping", "join", "invalid", "unknown"])
    }

    @Test("presence events, messages and status changes report how many sessions they went to")
    func fanOut() {
        let bench = SessionTestBench()
        let (alice, _) = bench.login("alice")
        let (bob, _) = bench.login("bob")
        let (carol, _) = bench.login("carol")
        bench.request("join", ["channel": "lobby"], on: alice)
        bench.request("join", ["channel": "lobby"], on: bob)
        let recorder = Recorder()
        bench.broker.instrumentation = recorder
        bench.request("join", ["channel": "lobby"], on: carol)          // join → alice, bob
        bench.request("publish", ["channel": "lobby", "message": "hi"], on: alice)  // → bob, carol
        bench.request("subscribeUserStatus", ["userIds": ["alice"]], on: bob)
        bench.request("setCustomStatus", ["customStatus": "busy"], on: alice)      // → bob
        #expect(recorder.fanOuts == [2, 2, 1])
    }
}
