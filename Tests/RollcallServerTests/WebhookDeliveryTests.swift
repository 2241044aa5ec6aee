@testable import RollcallServer
import Testing

/// The webhook policy with plain numbers (milliseconds): batching by count and by delay, one
/// batch in flight, retries with the same id, drops after `retryMaxSeconds`, queue overflow.
@Suite struct WebhookDeliveryTests {
    private func policy(batch: Int = 3, delay: Int64 = 500, timeout: Int64 = 5000, retryMax: Int64 = 300_000,
                        queue: Int = 100) -> WebhookDelivery.Policy {
        WebhookDelivery.Policy(batchMaxEvents: batch, batchMaxDelayMs: delay, timeoutMs: timeout,
                               retryMaxMs: retryMax, queueMaxEvents: queue)
    }

    private func event(_ n: Int) -> [UInt8] { Array(#"{"event":"e","n":\#(n)}"#.utf8) }

    /// The posts among `actions`.
    private func posts(_ actions: [WebhookDeliveryAction]) -> [(attempt: UInt64, batch: WebhookDelivery.Batch)] {
        actions.compactMap { if case .post(let attempt, let batch) = $0 { (attempt, batch) } else { nil } }
    }

    @Test func aFullBatchGoesAtOnce() {
        var machine = WebhookDelivery(policy: policy(), idPrefix: "p")
        #expect(machine.enqueue(event(1), now: 0).isEmpty)
        #expect(machine.enqueue(event(2), now: 10).isEmpty)
        let sent = posts(machine.enqueue(event(3), now: 20))
        #expect(sent.count == 1)
        #expect(sent.first?.batch.events.map(\.id) == ["p-e1", "p-e2", "p-e3"])
        #expect(sent.first?.batch.id == "p-b1")
        #expect(machine.waitingEvents == 0)
        #expect(machine.nextDeadline == Int64(20 + 5000))
    }

    @Test func aPartialBatchGoesWhenItsOldestEventIsOldEnough() {
        var machine = WebhookDelivery(policy: policy(), idPrefix: "p")
        _ = machine.enqueue(event(1), now: 100)
        _ = machine.enqueue(event(2), now: 400)
        #expect(machine.nextDeadline == Int64(600))
        #expect(machine.tick(now: 599).isEmpty)
        let sent = posts(machine.tick(now: 600))
        #expect(sent.first?.batch.events.count == 2)
    }

    @Test func aZeroDelaySendsEachEventAtOnce() {
        var machine = WebhookDelivery(policy: policy(delay: 0), idPrefix: "p")
        #expect(posts(machine.enqueue(event(1), now: 0)).first?.batch.events.count == 1)
    }

    @Test func oneBatchInFlightAndTheNextFollowsTheAcknowledgement() {
        var machine = WebhookDelivery(policy: policy(batch: 2), idPrefix: "p")
        _ = machine.enqueue(event(1), now: 0)
        let first = posts(machine.enqueue(event(2), now: 0))[0]
        for n in 3...5 { #expect(posts(machine.enqueue(event(n), now: 1)).isEmpty) }
        #expect(machine.waitingEvents == 3)
        let next = posts(machine.attemptAnswered(first.attempt, status: 204, now: 50))
        #expect(next.first?.batch.events.map(\.id) == ["p-e3", "p-e4"])
        #expect(next.first?.batch.id == "p-b2")
        #expect(machine.counters.deliveredBatches == 1)
        #expect(machine.counters.deliveredEvents == 2)
        // The leftover event waits for its own delay.
        _ = machine.attemptAnswered(next[0].attempt, status: 200, now: 60)
        #expect(machine.nextDeadline == Int64(1 + 500))
    }

    @Test func failuresAreRetriedWithDoublingDelaysAndTheSameBatch() {
        var machine = WebhookDelivery(policy: policy(batch: 1), idPrefix: "p")
        var current = posts(machine.enqueue(event(1), now: 0))[0]
        var now: Int64 = 0
        var delays: [Int64] = []
        for round in 0..<9 {
            let failed = round % 2 == 0
                ? machine.attemptAnswered(current.attempt, status: 500, now: now)
                : machine.attemptFailed(current.attempt, reason: .connection("refused"), now: now)
            #expect(failed.contains(.attemptFailed(batchId: "p-b1", attempt: round + 1,
                                                    reason: round % 2 == 0 ? .status(500) : .connection("refused"))))
            let retryAt = machine.nextDeadline!
            delays.append(retryAt - now)
            #expect(machine.tick(now: retryAt - 1).isEmpty)
            now = retryAt
            let retried = posts(machine.tick(now: now))
            #expect(retried.count == 1)
            #expect(retried[0].batch.id == "p-b1")
            #expect(retried[0].batch.events == current.batch.events)
            #expect(retried[0].attempt != current.attempt)
            current = retried[0]
        }
        #expect(delays == [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
        #expect(machine.counters.failedAttempts == 9)
    }

    @Test func aHangIsAbandonedAtTheTimeoutAndRetried() {
        var machine = WebhookDelivery(policy: policy(batch: 1, timeout: 1000), idPrefix: "p")
        let first = posts(machine.enqueue(event(1), now: 0))[0]
        #expect(machine.tick(now: 999).isEmpty)
        let timedOut = machine.tick(now: 1000)
        #expect(timedOut.first == .abandon(attempt: first.attempt))
        #expect(timedOut.contains(.attemptFailed(batchId: "p-b1", attempt: 1, reason: .timedOut)))
        #expect(machine.nextDeadline == Int64(1500))
        // A late answer to the abandoned attempt changes nothing.
        #expect(machine.attemptAnswered(first.attempt, status: 200, now: 1200).isEmpty)
        #expect(machine.counters.deliveredBatches == 0)
        let retry = posts(machine.tick(now: 1500))[0]
        #expect(retry.batch.id == "p-b1")
        _ = machine.attemptAnswered(retry.attempt, status: 200, now: 1600)
        #expect(machine.counters.deliveredBatches == 1)
        #expect(machine.isIdle)
    }

    @Test func aBatchIsDroppedOnceRetriesWouldPassRetryMax() {
        var machine = WebhookDelivery(policy: policy(batch: 2, retryMax: 2000), idPrefix: "p")
        _ = machine.enqueue(event(1), now: 0)
        var current = posts(machine.enqueue(event(2), now: 0))[0]
        _ = machine.enqueue(event(3), now: 100)
        // Attempts at 0, 500, 1500; the next would start at 3500 > 2000.
        var now: Int64 = 0
        for _ in 0..<2 {
            _ = machine.attemptAnswered(current.attempt, status: 503, now: now)
            now = machine.nextDeadline!
            current = posts(machine.tick(now: now))[0]
        }
        #expect(now == 1500)
        let last = machine.attemptAnswered(current.attempt, status: 503, now: now)
        #expect(last.contains(.dropped(.retriesExhausted, events: 2)))
        #expect(machine.counters.droppedRetriesExhausted == 2)
        // The next batch (event 3, old enough) starts right away.
        let next = posts(last)
        #expect(next.first?.batch.id == "p-b2")
        #expect(next.first?.batch.events.map(\.id) == ["p-e3"])
    }

    @Test func retryMaxZeroDropsAtTheFirstFailure() {
        var machine = WebhookDelivery(policy: policy(batch: 1, retryMax: 0), idPrefix: "p")
        let first = posts(machine.enqueue(event(1), now: 0))[0]
        #expect(machine.attemptFailed(first.attempt, reason: .timedOut, now: 10).contains(.dropped(.retriesExhausted, events: 1)))
        #expect(machine.isIdle)
    }

    @Test func theQueueDropsItsOldestWaitingEventsBeyondItsBound() {
        var machine = WebhookDelivery(policy: policy(batch: 2, queue: 3), idPrefix: "p")
        _ = machine.enqueue(event(1), now: 0)
        let inFlight = posts(machine.enqueue(event(2), now: 0))[0]
        for n in 3...5 { #expect(machine.enqueue(event(n), now: 1).isEmpty) }
        #expect(machine.waitingEvents == 3)
        #expect(machine.enqueue(event(6), now: 2) == [.dropped(.overflow, events: 1)])
        #expect(machine.enqueue(event(7), now: 2) == [.dropped(.overflow, events: 1)])
        #expect(machine.waitingEvents == 3)
        #expect(machine.counters.droppedOverflow == 2)
        // The batch in flight keeps its events; the survivors are the newest.
        let next = posts(machine.attemptAnswered(inFlight.attempt, status: 200, now: 3))
        #expect(next.first?.batch.events.map(\.id) == ["p-e5", "p-e6"])
    }

    @Test func drainingSendsWithoutWaitingForTheDelay() {
        var machine = WebhookDelivery(policy: policy(delay: 60_000), idPrefix: "p")
        _ = machine.enqueue(event(1), now: 0)
        #expect(machine.nextDeadline == Int64(60_000))
        let sent = posts(machine.drain(now: 5))
        #expect(sent.first?.batch.events.count == 1)
        _ = machine.enqueue(event(2), now: 6)
        let next = posts(machine.attemptAnswered(sent[0].attempt, status: 200, now: 7))
        #expect(next.first?.batch.events.map(\.id) == ["p-e2"])
    }

    @Test func anAnswerToAnotherAttemptIsIgnored() {
        var machine = WebhookDelivery(policy: policy(batch: 1), idPrefix: "p")
        let first = posts(machine.enqueue(event(1), now: 0))[0]
        #expect(machine.attemptAnswered(first.attempt + 1, status: 200, now: 1).isEmpty)
        #expect(machine.attemptFailed(first.attempt + 1, reason: .timedOut, now: 1).isEmpty)
        #expect(!machine.isIdle)
    }

    @Test func theDefaultPolicyComesFromTheSection() {
        let policy = WebhookDelivery.Policy(.init())
        #expect(policy == WebhookDelivery.Policy(batchMaxEvents: 100, batchMaxDelayMs: 500, timeoutMs: 5000,
                                                  retryMaxMs: 300_000, queueMaxEvents: 100_000))
        #expect(policy.retryDelay(1) == 500 && policy.retryDelay(7) == 30_000 && policy.retryDelay(100) == 30_000)
    }
}
