import Foundation

/// Runs the ramp: each step publishes at one offered rate for a fixed time, waits for the
/// deliveries to drain, and measures deliveries and broker CPU (from /proc) over the step.
struct FanoutRamp {
    let driver: FanoutDriver
    let sampler: ProcessSampler
    let receivers: Int
    /// Seconds of publishing per step, and how long the deliveries may stall afterwards
    /// before the step counts as incomplete.
    let stepSeconds: Double
    let drainSeconds: Double
    /// Unanswered publishes allowed at once.
    let window: Int
    /// The broker's /metrics, for objects per written frame (nil when attached elsewhere).
    let metrics: MetricsScrape?
    private static let writeCounters = ["rollcall_frames_out_total", "rollcall_objects_out_total"]

    /// Runs one step at `offered` deliveries per second; nil when the broker is gone.
    func run(offered: Double) -> FanoutStep? {
        let publishRate = offered / Double(receivers)
        let closesBefore = driver.closedReceivers
        let cutsBefore = driver.counters["slowConsumerCuts"]
        let ackedBefore = driver.counters["acked"]
        let rejectedBefore = driver.counters["rejected"] + driver.counters["failedReplies"]
        let expectedBefore = driver.expectedDeliveries
        let deliveredBefore = driver.deliveries.total
        let writesBefore = metrics?.read(Self.writeCounters)
        guard let splitBefore = CPUTimes.read(pid: sampler.pid) else { return nil }
        let cpuBefore = splitBefore.total
        let bytesBefore = driver.receivedBytes

        let me = ProcessSampler(pid: getpid())
        let clientCPUBefore = me.cpuSeconds() ?? 0
        let start = MonotonicSeconds.now
        var pacer = PublishPacer(rate: publishRate, window: window, start: start)
        var nextPrint = start + 1
        var now = start
        while now < start + stepSeconds {
            driver.publish(pacer.due(outstanding: driver.outstanding, now: now))
            usleep(500)
            now = MonotonicSeconds.now
            if now >= nextPrint {
                nextPrint += 1
                print(String(format: "fanout:   t=%.0fs sent %d, acked %d, delivered %d", now - start,
                             pacer.sent, driver.counters["acked"] - ackedBefore, driver.deliveries.total - deliveredBefore))
            }
        }
        let end = MonotonicSeconds.now
        let deliveredAtEnd = driver.deliveries.total
        let expectedAtEnd = driver.expectedDeliveries
        let cpuAtEnd = sampler.cpuSeconds() ?? cpuBefore
        let clientCPUAtEnd = me.cpuSeconds() ?? clientCPUBefore
        let scheduled = pacer.scheduled(now: end)

        // Drain: every publish answered and every promised delivery counted, or no progress
        // for `drainSeconds`, or 15 s in all.
        let drainLimit = MonotonicSeconds.now + 15
        var lastProgress = MonotonicSeconds.now
        var lastCount = driver.deliveries.total + driver.counters["acked"]
        while MonotonicSeconds.now < drainLimit, MonotonicSeconds.now - lastProgress < drainSeconds,
              driver.outstanding > 0 || driver.deliveries.total < driver.expectedDeliveries {
            usleep(10_000)
            let count = driver.deliveries.total + driver.counters["acked"]
            if count != lastCount { lastCount = count; lastProgress = MonotonicSeconds.now }
        }
        usleep(100_000)  // late extra deliveries would show up as a mismatch
        guard let splitAfter = CPUTimes.read(pid: sampler.pid) else { return nil }
        let cpuAfter = splitAfter.total
        let delivered = driver.deliveries.total - deliveredBefore
        var bytesPerDelivery = 0.0
        if let bytesBefore, let bytesAfter = driver.receivedBytes, delivered > 0 {
            bytesPerDelivery = Double(bytesAfter - bytesBefore) / Double(delivered)
        }
        let writesAfter = metrics?.read(Self.writeCounters)
        var objectsPerFrame = 0.0
        if let writesBefore, let writesAfter,
           let frames = writesAfter["rollcall_frames_out_total"].flatMap({ $0 - (writesBefore["rollcall_frames_out_total"] ?? 0) }),
           let objects = writesAfter["rollcall_objects_out_total"].flatMap({ $0 - (writesBefore["rollcall_objects_out_total"] ?? 0) }),
           frames > 0 {
            objectsPerFrame = objects / frames
        }
        let rate = Double(deliveredAtEnd - deliveredBefore) / (end - start)
        // Behind = deliveries the publishes sent so far should have produced and that have
        // not arrived (publishes the broker has not read yet count too).
        let promised = max(expectedAtEnd - expectedBefore, pacer.sent * receivers)
        let behind = Double(max(0, promised - (deliveredAtEnd - deliveredBefore)))
        return FanoutStep(
            offered: offered, publishRate: publishRate, seconds: end - start,
            acked: driver.counters["acked"] - ackedBefore,
            rejected: driver.counters["rejected"] + driver.counters["failedReplies"] - rejectedBefore,
            expected: driver.expectedDeliveries - expectedBefore, delivered: delivered,
            deliveriesPerSecond: rate,
            cpuMicrosPerDelivery: delivered > 0 ? (cpuAfter - cpuBefore) / Double(delivered) * 1e6 : 0,
            bytesPerDelivery: bytesPerDelivery,
            objectsPerFrame: objectsPerFrame,
            kernelShare: cpuAfter > cpuBefore ? (splitAfter.system - splitBefore.system) / (cpuAfter - cpuBefore) : 0,
            brokerCores: (cpuAtEnd - cpuBefore) / (end - start),
            clientCores: (clientCPUAtEnd - clientCPUBefore) / (end - start),
            lagSeconds: behind / max(offered, 1),
            receiverCloses: driver.closedReceivers - closesBefore,
            slowConsumerCuts: driver.counters["slowConsumerCuts"] - cutsBefore,
            scheduled: scheduled, sent: pacer.sent)
    }
}
