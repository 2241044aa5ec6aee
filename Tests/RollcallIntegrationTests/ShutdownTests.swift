import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// PROTOCOL §5: SIGTERM closes every session with 1001 and exits 0 within 2 s.
@Suite("Shutdown")
struct ShutdownTests {
    @Test("SIGTERM: every client gets 1001, exit status 0 within 2 s")
    func sigterm() throws {
        let broker = try BrokerProcess()
        var sessions = try (0..<20).map { try broker.session("user\($0 % 7)") }
        sessions.append(try broker.connect()) // not logged in yet
        let exit = try #require(broker.stop(timeout: 5), "broker did not exit")
        #expect(!exit.signaled)
        #expect(exit.status == 0)
        #expect(exit.seconds < 2, "exit took \(exit.seconds) s")
        for session in sessions {
            let close = try session.waitForClose(timeout: .seconds(3))
            #expect(close.code == 1001, "\(close)")
        }
    }

    @Test("a broker spawned with SIGINT/SIGTERM blocked unblocks them: SIGTERM still stops it gracefully")
    func sigtermWhenSpawnedBlocked() throws {
        let broker = try BrokerProcess(blockedSignals: [SIGINT, SIGTERM])
        let session = try broker.session("alice")
        let exit = try #require(broker.stop(timeout: 5), "the broker ignored SIGTERM")
        #expect(!exit.signaled)
        #expect(exit.status == 0)
        #expect(try session.waitForClose(timeout: .seconds(3)).code == 1001)
    }

    @Test("after SIGTERM the port no longer accepts connections")
    func stopsListening() throws {
        let broker = try BrokerProcess()
        let port = broker.port
        _ = try #require(broker.stop(timeout: 5))
        #expect(throws: (any Error).self) { _ = try RawSocket(port: port) }
    }
}
