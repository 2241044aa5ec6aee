@testable import RollcallCore
@testable import RollcallRedisEngine
import Testing

/// ``StoreCallGate`` on plain numbers: the bound on commands in flight, the order, giving up.
@Suite("Cluster: admission control on the command link")
struct StoreCallGateTests {
    private let one: [StoreCommand] = [.command([Array("PING".utf8)])]

    private func tickets(_ decisions: [StoreCallGate.Decision]) -> [String] {
        decisions.map {
            switch $0 {
            case .send(let call): "send \(call.ticket.rawValue)"
            case .giveUp(let call): "giveUp \(call.ticket.rawValue)"
            }
        }
    }

    private func all(_ gate: inout StoreCallGate, now: Double) -> [StoreCallGate.Decision] {
        var decisions: [StoreCallGate.Decision] = []
        while let decision = gate.next(now: now) { decisions.append(decision) }
        return decisions
    }

    @Test("at most maxCommandsInFlight commands are sent; each answer lets the next one go, in order")
    func boundAndOrder() {
        var gate = StoreCallGate(maxCommandsInFlight: 2, maxWaitSeconds: 1)
        for ticket in 1...4 { gate.enqueue(StoreTicket(UInt64(ticket)), one, now: 0) }
        #expect(tickets(all(&gate, now: 0.1)) == ["send 1", "send 2"])
        #expect(gate.commandsInFlight == 2 && gate.waitingCount == 2)
        gate.answered()
        #expect(tickets(all(&gate, now: 0.2)) == ["send 3"])
        gate.answered()
        gate.answered()
        #expect(tickets(all(&gate, now: 0.3)) == ["send 4"])
        #expect(gate.nextGiveUp == nil)
    }

    @Test("a call larger than the bound goes alone once the link is empty")
    func largeCallAlone() {
        var gate = StoreCallGate(maxCommandsInFlight: 2, maxWaitSeconds: 1)
        gate.enqueue(StoreTicket(1), one, now: 0)
        gate.enqueue(StoreTicket(2), one + one + one, now: 0)
        #expect(tickets(all(&gate, now: 0)) == ["send 1"])
        gate.answered()
        #expect(tickets(all(&gate, now: 0)) == ["send 2"])
        #expect(gate.commandsInFlight == 3)
    }

    @Test("a call that waited maxWaitSeconds unsent is given up; the ones queued later still go")
    func givesUpTheLateOnes() {
        var gate = StoreCallGate(maxCommandsInFlight: 1, maxWaitSeconds: 0.5)
        gate.enqueue(StoreTicket(1), one, now: 0)
        gate.enqueue(StoreTicket(2), one, now: 0)
        gate.enqueue(StoreTicket(3), one, now: 0.4)
        #expect(tickets(all(&gate, now: 0)) == ["send 1"])
        #expect(gate.nextGiveUp == 0.5)
        #expect(tickets(all(&gate, now: 0.5)) == ["giveUp 2"])
        #expect(gate.nextGiveUp == 0.9)
        gate.answered()
        #expect(tickets(all(&gate, now: 0.6)) == ["send 3"])
        #expect(gate.drain().isEmpty)
    }
}
