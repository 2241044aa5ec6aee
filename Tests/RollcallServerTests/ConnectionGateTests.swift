@testable import RollcallServer
import Logging
import Testing

/// The connection cap's counting and decisions, with stand-in socket pointers.
@Suite("ConnectionGate")
struct ConnectionGateTests {
    private func socket(_ n: Int) -> OpaquePointer { OpaquePointer(bitPattern: 0x1000 * (n + 1))! }

    /// A gate whose cap is `limit` (an open-file limit of `limit` + the reserve).
    private func gate(limit: Int) -> ConnectionGate {
        var gate = ConnectionGate(logger: Logger(label: "test"))
        gate.cap = ConnectionCap(descriptorLimit: limit + ConnectionCap.reserve)
        return gate
    }

    /// `#expect` cannot call a mutating method itself.
    private func refuses(_ gate: inout ConnectionGate, _ metrics: inout TransportMetrics) -> Bool { gate.refusesForCap(&metrics) }
    private func admits(_ gate: inout ConnectionGate, _ metrics: inout TransportMetrics) -> Bool { gate.admitsNewSocket(&metrics) }

    @Test func socketsAndFilesBeingSentAreCounted() {
        var gate = gate(limit: 10)
        gate.socketCreated(socket(1))
        gate.socketCreated(socket(2))
        gate.fileStarted(socket(2))
        #expect(gate.descriptorsInUse == 3)
        gate.fileEnded(socket(2))
        #expect(gate.descriptorsInUse == 2)
        gate.fileStarted(socket(1))
        gate.socketDestroyed(socket(1))  // its file goes with it
        #expect(gate.descriptorsInUse == 1)
        #expect(gate.openSockets == [socket(2)])
    }

    @Test func aboveTheCapRequestsAreRefusedAndCountedUntilBelowIt() {
        var gate = gate(limit: 2)
        var metrics = TransportMetrics()
        for n in 0..<2 { gate.socketCreated(socket(n)) }
        #expect(!refuses(&gate, &metrics))
        gate.socketCreated(socket(2))
        #expect(refuses(&gate, &metrics))
        #expect(gate.isRefusing)
        #expect(metrics.connectionsRefused == 1)
        gate.socketDestroyed(socket(2))
        // At the cap: no longer refused, but still refusing (no "accepting again" yet).
        #expect(!refuses(&gate, &metrics))
        #expect(gate.isRefusing)
        gate.socketDestroyed(socket(1))
        #expect(!refuses(&gate, &metrics))
        #expect(!gate.isRefusing)
        #expect(metrics.connectionsRefused == 1)
    }

    @Test func aSocketBeyondTheRefusalBandIsClosedAtAccept() {
        var gate = gate(limit: 1)
        var metrics = TransportMetrics()
        let hard = gate.cap.hardLimit
        for n in 0..<(hard - 1) { gate.socketCreated(socket(n)) }
        #expect(admits(&gate, &metrics))
        gate.socketCreated(socket(hard))
        #expect(!admits(&gate, &metrics))
        #expect(metrics.connectionsRefused == 1)
        #expect(metrics.connectionsClosedAtAccept == 1)
        #expect(gate.isRefusing)
    }
}
