import Foundation

/// The measured part of the scenario: publishes every message through the window, waits
/// (bounded) for the last reply and for the fast receivers' last delivery, and samples the
/// broker's CPU from `/proc` all along.
struct SlowConsumersRun {
    /// The channel every receiver joins and the publisher publishes to.
    static let channel = "bench:slow"
    /// Every receiver's join: messages only, no presence events.
    static let joinRequest = #"{"id":2,"op":"join","channel":"\#(channel)","presence":false,"messages":true}"#
    private static let cutCounters = ["rollcall_slow_consumer_cuts_total", "rollcall_heartbeat_timeouts_total"]

    let publisher: PipelinedPublisher
    let fast: FastReceivers
    let brokerPID: Int32
    /// The broker's /metrics (nil when it cannot be reached).
    let metrics: MetricsScrape?
    let messages: Int
    /// Seconds from the first publish after which the run gives up waiting.
    let timeout: Double

    /// Runs it; nil when the broker process is gone.
    func measure() -> SlowConsumersOutcome? {
        let countersBefore = metrics?.read(Self.cutCounters)
        let fastClosedBefore = fast.closed
        let deliveredBefore = fast.delivered
        guard let cpuBefore = CPUTimes.read(pid: brokerPID) else { return nil }
        let start = MonotonicSeconds.now
        let deadline = start + timeout
        var sampler = CurveSampler(pid: brokerPID, cpuBefore: cpuBefore, every: max(1, messages / 50))
        var nextPrint = start + 1
        /// Samples when due, and prints progress once a second.
        func tick() {
            sampler.sampleIfDue(answered: publisher.answered)
            let now = MonotonicSeconds.now
            guard now >= nextPrint else { return }
            nextPrint += 1
            print(String(format: "slow-consumers:   t=%.0fs sent %d, answered %d, fast deliveries %d, broker CPU %.2f s",
                         now - start, publisher.sent, publisher.answered, fast.delivered - deliveredBefore,
                         sampler.curve.points.last?.cpuSeconds ?? 0))
        }

        while publisher.sent < messages, publisher.publishNext(channel: Self.channel, before: deadline) { tick() }
        // Every receiver gets each acknowledged message (the publisher has not joined).
        let fastCount = fast.joined
        var timedOut = false
        while publisher.answered < publisher.sent || fast.delivered - deliveredBefore < publisher.acknowledged * fastCount {
            // A closed socket's replies or deliveries will never come: no use waiting for them.
            if MonotonicSeconds.now >= deadline || publisher.isClosed || fast.closed > fastClosedBefore { timedOut = true; break }
            usleep(2_000)
            tick()
        }
        let end = MonotonicSeconds.now
        guard let cpuAfter = CPUTimes.read(pid: brokerPID) else { return nil }
        var curve = sampler.curve
        curve.record(messages: publisher.answered, cpuSeconds: (cpuAfter - cpuBefore).total)
        let countersAfter = metrics?.read(Self.cutCounters)
        func delta(_ name: String) -> Int? {
            guard let before = countersBefore?[name], let after = countersAfter?[name] else { return nil }
            return Int(after - before)
        }
        return SlowConsumersOutcome(
            messages: messages, sent: publisher.sent, acknowledged: publisher.acknowledged, rejected: publisher.rejected,
            recipients: publisher.recipients, fastExpected: messages * fastCount,
            fastDelivered: fast.delivered - deliveredBefore, fastClosed: fast.closed - fastClosedBefore,
            cpu: cpuAfter - cpuBefore, wallSeconds: end - start, timedOut: timedOut || publisher.sent < messages,
            curve: curve, slowConsumerCuts: delta(Self.cutCounters[0]), heartbeatTimeouts: delta(Self.cutCounters[1]))
    }
}
