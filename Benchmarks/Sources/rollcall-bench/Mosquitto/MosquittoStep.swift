import Foundation

/// One rate step against mosquitto: QoS 0 publishes paced for `stepSeconds`, then a drain
/// until every receiver has every publish (or no progress for `drainSeconds`, or 60 s); broker CPU
/// from /proc over the step and its drain, as for the Rollcall ramp.
struct MosquittoStep {
    let offered: Double
    let deliveriesPerSecond: Double
    let expected: Int
    let delivered: Int
    let cpuMicrosPerDelivery: Double
    let kernelShare: Double
    let brokerCores: Double
    let receiverCloses: Int

    var lost: Int { max(0, expected - delivered) }

    var line: String {
        String(format: "offered %7.0f/s: delivered %7.0f/s, %.3f µs broker CPU/delivery (%.0f%% kernel), broker %.0f%% of a core, %d/%d delivered, %d closes",
               offered, deliveriesPerSecond, cpuMicrosPerDelivery, kernelShare * 100, brokerCores * 100, delivered, expected, receiverCloses)
    }

    /// Runs one step at `offered` deliveries per second; nil when the broker is gone.
    static func run(driver: MosquittoFanoutDriver, pid: Int32, receivers: Int, offered: Double,
                    stepSeconds: Double, drainSeconds: Double) -> MosquittoStep? {
        let deliveredBefore = driver.deliveries.total
        let publishedBefore = driver.counters["published"]
        let closesBefore = driver.counters["receiverCloses"]
        guard let cpuBefore = CPUTimes.read(pid: pid) else { return nil }
        let start = MonotonicSeconds.now
        var pacer = PublishPacer(rate: offered / Double(receivers), window: Int.max / 2, start: start)
        var now = start
        while now < start + stepSeconds {
            driver.publish(pacer.due(outstanding: 0, now: now))
            usleep(500)
            now = MonotonicSeconds.now
        }
        let end = MonotonicSeconds.now
        let deliveredAtEnd = driver.deliveries.total
        let cpuAtEnd = CPUTimes.read(pid: pid) ?? cpuBefore
        let expected = (driver.counters["published"] - publishedBefore) * receivers
        var lastCount = driver.deliveries.total
        var lastProgress = MonotonicSeconds.now
        // Up to 60 s: a saturated mosquitto still drains its queues at its top rate, and a
        // shorter cap would count the undelivered tail as lost.
        let drainLimit = lastProgress + 60
        while driver.deliveries.total - deliveredBefore < expected, MonotonicSeconds.now < drainLimit,
              MonotonicSeconds.now - lastProgress < drainSeconds {
            usleep(10_000)
            let count = driver.deliveries.total
            if count != lastCount { lastCount = count; lastProgress = MonotonicSeconds.now }
        }
        usleep(100_000)
        guard let cpuAfter = CPUTimes.read(pid: pid) else { return nil }
        let delivered = driver.deliveries.total - deliveredBefore
        let cpu = cpuAfter - cpuBefore
        return MosquittoStep(
            offered: offered, deliveriesPerSecond: Double(deliveredAtEnd - deliveredBefore) / (end - start),
            expected: expected, delivered: delivered,
            cpuMicrosPerDelivery: delivered > 0 ? cpu.total / Double(delivered) * 1e6 : 0,
            kernelShare: cpu.total > 0 ? cpu.system / cpu.total : 0,
            brokerCores: (cpuAtEnd - cpuBefore).total / (end - start),
            receiverCloses: driver.counters["receiverCloses"] - closesBefore)
    }
}
