@testable import RollcallServer
import Testing

/// *(1.2)* Events whose ids durable storage fixed (PROTOCOL §11 "Nothing lost"): they keep
/// their ids, a batch of them is named after them, and every one that leaves for good — a 2xx,
/// a drop after `retryMaxSeconds`, a queue overflow — is reported `settled` so that storage
/// forgets it; nothing else is.
@Suite struct WebhookStoredDeliveryTests {
    private func policy(batch: Int = 2, delay: Int64 = 500, retryMax: Int64 = 300_000, queue: Int = 100) -> WebhookDelivery.Policy {
        WebhookDelivery.Policy(batchMaxEvents: batch, batchMaxDelayMs: delay, timeoutMs: 5000, retryMaxMs: retryMax, queueMaxEvents: queue)
    }

    private func event(_ n: Int) -> [UInt8] { Array(#"{"event":"e","n":\#(n)}"#.utf8) }

    private func posts(_ actions: [WebhookDeliveryAction]) -> [(attempt: UInt64, batch: WebhookDelivery.Batch)] {
        actions.compactMap { if case .post(let attempt, let batch) = $0 { (attempt, batch) } else { nil } }
    }

    private func settled(_ actions: [WebhookDeliveryAction]) -> [String] {
        actions.flatMap { action -> [String] in
            guard case .settled(let ids) = action else { return [] }
            return ids
        }
    }

    @Test func storedEventsKeepTheirIdsAndAnAcknowledgedBatchIsSettled() {
        var machine = WebhookDelivery(policy: policy(), idPrefix: "p")
        _ = machine.enqueue(event(1), id: "j-w7", now: 0)
        let sent = posts(machine.enqueue(event(2), id: "j-w8", now: 0))
        guard let batch = sent.first?.batch else { Issue.record("no post"); return }
        #expect(batch.events.map(\.id) == ["j-w7", "j-w8"])
        #expect(batch.id == "j-w7+2", "named after its events, so it keeps its id when formed again")
        let failed = machine.attemptFailed(sent[0].attempt, reason: .status(500), now: 10)
        #expect(settled(failed).isEmpty, "a failed attempt settles nothing")
        let retry = posts(machine.tick(now: 10 + 500))
        #expect(retry.first?.batch.id == "j-w7+2")
        #expect(settled(machine.attemptAnswered(retry[0].attempt, status: 200, now: 600)) == ["j-w7", "j-w8"])
    }

    @Test func aBatchDroppedAfterRetryMaxAndAnOverflowedEventAreSettled() {
        var machine = WebhookDelivery(policy: policy(batch: 1, delay: 0, retryMax: 0, queue: 1), idPrefix: "p")
        let sent = posts(machine.enqueue(event(1), id: "j-w1", now: 0))
        _ = machine.enqueue(event(2), id: "j-w2", now: 1)
        #expect(settled(machine.enqueue(event(3), id: "j-w3", now: 2)) == ["j-w2"], "the oldest waiting event overflowed")
        let dropped = machine.attemptFailed(sent[0].attempt, reason: .timedOut, now: 3)
        #expect(settled(dropped) == ["j-w1"])
        #expect(posts(dropped).first?.batch.events.map(\.id) == ["j-w3"])
        #expect(machine.counters.droppedOverflow == 1 && machine.counters.droppedRetriesExhausted == 1)
    }

    @Test func eventsDueNowGoAtOnceAndDropsElsewhereAreCounted() {
        var machine = WebhookDelivery(policy: policy(batch: 10, delay: 60_000), idPrefix: "p")
        let sent = posts(machine.deliverNow([("r:1-0", event(1)), ("r:1-1", event(2))], now: 0))
        #expect(sent.first?.batch.id == "r:1-0+2")
        #expect(machine.droppedElsewhere(3) == [.dropped(.overflow, events: 3)])
        #expect(machine.counters.droppedOverflow == 3)
        #expect(machine.droppedElsewhere(0).isEmpty)
    }

    @Test func eventsKeptInMemoryAreNeverSettled() {
        var machine = WebhookDelivery(policy: policy(batch: 1), idPrefix: "p")
        let sent = posts(machine.enqueue(event(1), now: 0))
        #expect(sent.first?.batch.id == "p-b1")
        #expect(settled(machine.attemptAnswered(sent[0].attempt, status: 200, now: 1)).isEmpty)
    }
}
