import Foundation
import Histogram

/// What the probing window measured.
struct LatencyMeasurement {
    let histogram: Histogram<UInt64>
    /// Probe arrivals whose send time was unknown (should be 0).
    let unknownArrivals: Int
    let probes: Int
    let seconds: Double
    /// Background deliveries per second actually counted, and the share of promised ones.
    let backgroundPerSecond: Double
    let backgroundExpected: Int
    let backgroundDelivered: Int
    /// Broker CPU use over the window (1.0 = one core).
    let brokerCores: Double
    /// The bench's own CPU use over the window (its client threads reading the members' sockets).
    let benchCores: Double
    /// Per probe, ms: send → first member's arrival, and first → last member's arrival.
    let firstAfterSend: [Double]
    let lastAfterFirst: [Double]
    /// The plain-`write` broadcast's rounds run between probes (µs per write), when one was given.
    let floorRounds: [Double]
    /// The lws broadcast's rounds, run in the same gaps (µs per write), when one was given.
    let lwsFloorRounds: [Double]
    /// The plain broadcast as one io_uring submission, in the same gaps (µs per write); empty
    /// where the kernel gives no io_uring.
    let batchedFloorRounds: [Double]
}

/// Drives the probing window: probes and background publishes paced from one thread,
/// progress once a second, then waits for the last deliveries. Halfway between two probes
/// the same thread runs one round of each floor broadcast (lws and plain `write`, which goes
/// first alternating, then the plain one as one io_uring submission), so the floors are
/// measured in the same seconds as the broker's broadcasts, not after them.
struct LatencyRun {
    let driver: LatencyDriver
    let floor: RawBroadcast?
    let lwsFloor: LWSBroadcast?
    let sampler: ProcessSampler
    let seconds: Double
    let probeRate: Double
    let backgroundRate: Double
    let maxProbes: Int

    func measure() -> LatencyMeasurement? {
        guard let cpuBefore = sampler.cpuSeconds() else { return nil }
        let bench = ProcessSampler(pid: getpid())
        let benchBefore = bench.cpuSeconds() ?? 0
        let deliveredBefore = driver.backgroundDeliveries.total
        let start = MonotonicSeconds.now
        var probes = PublishPacer(rate: probeRate, window: 4, start: start)
        var background = PublishPacer(rate: backgroundRate, window: 64, start: start)
        var probesSent = 0
        var floorRounds: [Double] = []
        var lwsFloorRounds: [Double] = []
        var batchedFloorRounds: [Double] = []
        var nextFloorRound = start + 0.5 / probeRate
        var nextPrint = start + 1
        var now = start
        while now < start + seconds {
            // The prober waits for nothing: its window only bounds a stalled broker.
            let outstandingProbes = probesSent - driver.counters["probeAcks"] - driver.counters["probeErrors"]
            for _ in 0..<probes.due(outstanding: outstandingProbes, now: now) where probesSent < maxProbes {
                driver.probe(probesSent)
                probesSent += 1
            }
            driver.publishBackground(background.due(outstanding: driver.outstandingPublishes, now: now))
            if now >= nextFloorRound {
                nextFloorRound += 1 / probeRate
                let lwsFirst = (floorRounds.count + lwsFloorRounds.count) % 4 == 0
                if lwsFirst, let lwsFloor { lwsFloorRounds.append(lwsFloor.round()) }
                if let floor { floorRounds.append(floor.round()) }
                if !lwsFirst, let lwsFloor { lwsFloorRounds.append(lwsFloor.round()) }
                if let batched = floor?.batchedRound() { batchedFloorRounds.append(batched) }
            }
            usleep(500)
            now = MonotonicSeconds.now
            if now >= nextPrint {
                nextPrint += 1
                let merged = driver.clock.merged().histogram
                print(String(format: "latency: t=%.0fs probes %d, arrivals %d, p50 %.2f ms, p99 %.2f ms, background %d delivered",
                             now - start, probesSent, Int(merged.totalCount), Double(merged.valueAtPercentile(50)) / 1000,
                             Double(merged.valueAtPercentile(99)) / 1000, driver.backgroundDeliveries.total - deliveredBefore))
            }
        }
        let end = MonotonicSeconds.now
        let cpuAtEnd = sampler.cpuSeconds() ?? cpuBefore
        let benchAtEnd = bench.cpuSeconds() ?? benchBefore
        let deliveredAtEnd = driver.backgroundDeliveries.total
        // Let the last probes and publishes arrive (bounded).
        let deadline = MonotonicSeconds.now + 3
        while MonotonicSeconds.now < deadline,
              driver.outstandingPublishes > 0
                || driver.backgroundDeliveries.total - deliveredBefore < driver.counters["backgroundExpected"] {
            usleep(10_000)
        }
        usleep(200_000)
        let (histogram, unknown) = driver.clock.merged()
        let spreads = driver.clock.spreads()
        return LatencyMeasurement(
            histogram: histogram, unknownArrivals: unknown, probes: probesSent, seconds: end - start,
            backgroundPerSecond: Double(deliveredAtEnd - deliveredBefore) / (end - start),
            backgroundExpected: driver.counters["backgroundExpected"],
            backgroundDelivered: driver.backgroundDeliveries.total - deliveredBefore,
            brokerCores: (cpuAtEnd - cpuBefore) / (end - start), benchCores: (benchAtEnd - benchBefore) / (end - start),
            firstAfterSend: spreads.firstAfterSend, lastAfterFirst: spreads.lastAfterFirst, floorRounds: floorRounds,
            lwsFloorRounds: lwsFloorRounds.filter { !$0.isNaN }, batchedFloorRounds: batchedFloorRounds)
    }
}
