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

    @Test("a request queued behind upkeep goes first; upkeep is sent only while no request waits")
    func requestsBeforeUpkeep() {
        var gate = StoreCallGate(maxCommandsInFlight: 2, maxWaitSeconds: 1)
        for ticket in 1...3 { gate.enqueue(StoreTicket(UInt64(ticket)), one, priority: .background, now: 0) }
        #expect(tickets(all(&gate, now: 0)) == ["send 1", "send 2"])
        gate.enqueue(StoreTicket(10), one, now: 0.1)
        gate.enqueue(StoreTicket(11), one, now: 0.1)
        gate.answered()
        // Room for one: the first request, not upkeep 3 that waited longer.
        #expect(tickets(all(&gate, now: 0.2)) == ["send 10"])
        gate.answered()
        #expect(tickets(all(&gate, now: 0.3)) == ["send 11"])
        gate.answered()
        // No request waits: upkeep goes again.
        #expect(tickets(all(&gate, now: 0.4)) == ["send 3"])
        #expect(gate.waitingCount == 0)
    }

    @Test("upkeep that waited maxWaitSeconds behind requests is given up like a request; the lanes keep their order")
    func upkeepGivenUpToo() {
        var gate = StoreCallGate(maxCommandsInFlight: 1, maxWaitSeconds: 0.5)
        gate.enqueue(StoreTicket(1), one, now: 0)
        gate.enqueue(StoreTicket(2), one, priority: .background, now: 0)
        gate.enqueue(StoreTicket(3), one, priority: .background, now: 0.45)
        gate.enqueue(StoreTicket(4), one, now: 0.3)
        #expect(tickets(all(&gate, now: 0)) == ["send 1"])
        #expect(gate.nextGiveUp == 0.5)
        #expect(tickets(all(&gate, now: 0.5)) == ["giveUp 2"])
        #expect(gate.nextGiveUp == 0.8)
        gate.answered()
        // Upkeep 3 has waited less than half the give-up time: the request goes.
        #expect(tickets(all(&gate, now: 0.6)) == ["send 4"])
        #expect(tickets(all(&gate, now: 0.96)) == ["giveUp 3"])
        #expect(gate.drain().isEmpty)
    }

    @Test("upkeep that waited half of maxWaitSeconds takes turns with requests that never stop coming")
    func upkeepTakesTurns() {
        var gate = StoreCallGate(maxCommandsInFlight: 1, maxWaitSeconds: 1)
        gate.enqueue(StoreTicket(10), one, now: 0)
        gate.enqueue(StoreTicket(1), one, priority: .background, now: 0)
        gate.enqueue(StoreTicket(2), one, priority: .background, now: 0)
        for ticket in 11...13 { gate.enqueue(StoreTicket(UInt64(ticket)), one, now: 0.3) }
        var sent: [String] = []
        for now in [0, 0.4, 0.6, 0.65, 0.7, 0.75] {
            sent += tickets(all(&gate, now: now))
            gate.answered()
        }
        // Requests first until upkeep's head waited 0.5 s; then one each, nothing given up.
        #expect(sent == ["send 10", "send 11", "send 1", "send 12", "send 2", "send 13"])
        #expect(gate.waitingCount == 0)
        // Upkeep sent while no request waits is not upkeep's turn: the next aged upkeep still
        // goes before a request.
        gate.enqueue(StoreTicket(3), one, priority: .background, now: 1.8)
        #expect(tickets(all(&gate, now: 2.0)) == ["send 3"])
        gate.answered()
        gate.enqueue(StoreTicket(4), one, priority: .background, now: 2.0)
        gate.enqueue(StoreTicket(14), one, now: 2.55)
        #expect(tickets(all(&gate, now: 2.6)) == ["send 4"])
        gate.answered()
        #expect(tickets(all(&gate, now: 2.6)) == ["send 14"])
    }
}
