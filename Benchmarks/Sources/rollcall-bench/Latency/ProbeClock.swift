import Foundation
import Histogram
import RollcallClient

/// Maps probe sequence numbers to their monotonic send times, and records arrival − send
/// into one HdrHistogram per client runtime or plain-socket reader thread (merged at the
/// end), so reader threads never contend with each other.
final class ProbeClock: @unchecked Sendable {
    /// One runtime's histogram.
    private final class Shard: @unchecked Sendable {
        let lock = NSLock()
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var unknown = 0
    }

    private let lock = NSLock()
    private var sendTimes: [Double]
    /// Each probe's first and last arrival (monotonic seconds; -1 before the first).
    private var firstArrivals: [Double]
    private var lastArrivals: [Double]
    private let shards: [(runtime: ClientRuntime?, shard: Shard)]

    /// Room for `capacity` probes; one histogram per runtime, and `rawShards` more for
    /// plain-socket reader threads (picked by number, ``recorder(shard:)``).
    init(capacity: Int, runtimes: [ClientRuntime], rawShards: Int = 0) {
        sendTimes = Array(repeating: -1, count: capacity)
        firstArrivals = sendTimes
        lastArrivals = sendTimes
        shards = runtimes.map { ($0, Shard()) } + (0..<rawShards).map { _ in (nil, Shard()) }
    }

    /// Probes that fit.
    var capacity: Int { sendTimes.count }

    /// Notes that probe `sequence` is being sent now.
    func stamp(_ sequence: Int) {
        let now = MonotonicSeconds.now
        lock.lock()
        if sequence >= 0, sequence < sendTimes.count { sendTimes[sequence] = now }
        lock.unlock()
    }

    /// The send time of probe `sequence`, noting an arrival `now`; nil when unknown.
    private func arrived(_ sequence: Int, now: Double) -> Double? {
        lock.lock(); defer { lock.unlock() }
        guard sequence >= 0, sequence < sendTimes.count, sendTimes[sequence] >= 0 else { return nil }
        if firstArrivals[sequence] < 0 { firstArrivals[sequence] = now }
        lastArrivals[sequence] = max(lastArrivals[sequence], now)
        return sendTimes[sequence]
    }

    /// Per probe that arrived anywhere: send → first arrival, and first → last arrival
    /// (how long its broadcast took to reach every member), in ms.
    func spreads() -> (firstAfterSend: [Double], lastAfterFirst: [Double]) {
        lock.lock(); defer { lock.unlock() }
        var first: [Double] = [], spread: [Double] = []
        for index in sendTimes.indices where sendTimes[index] >= 0 && firstArrivals[index] >= 0 {
            first.append((firstArrivals[index] - sendTimes[index]) * 1000)
            spread.append((lastArrivals[index] - firstArrivals[index]) * 1000)
        }
        return (first, spread)
    }

    /// A closure for a connection on `runtime` (call only from its service thread) that
    /// records the latency of probe `sequence` arriving now.
    func recorder(for runtime: ClientRuntime) -> (Int) -> Void {
        recorder(into: shards.first { $0.runtime === runtime }?.shard ?? shards[0].shard)
    }

    /// A recorder for plain-socket connection `number` (shard `number % rawShards`; call it
    /// only from that socket's reader thread). The arrival is timed when its frame is scanned.
    func recorder(shard number: Int) -> (Int) -> Void {
        let raw = shards.filter { $0.runtime == nil }
        return recorder(into: raw.isEmpty ? shards[0].shard : raw[number % raw.count].shard)
    }

    private func recorder(into shard: Shard) -> (Int) -> Void {
        { [self] sequence in
            let now = MonotonicSeconds.now
            guard let sent = arrived(sequence, now: now) else {
                shard.lock.lock(); shard.unknown += 1; shard.lock.unlock()
                return
            }
            let micros = UInt64(max(0, (now - sent) * 1e6).rounded())
            shard.lock.lock()
            _ = shard.histogram.record(min(micros, 60_000_000))
            shard.lock.unlock()
        }
    }

    /// Every shard's histogram added together, and the arrivals of unknown probes.
    func merged() -> (histogram: Histogram<UInt64>, unknown: Int) {
        var total = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var unknown = 0
        for (_, shard) in shards {
            shard.lock.lock()
            total.add(shard.histogram)
            unknown += shard.unknown
            shard.lock.unlock()
        }
        return (total, unknown)
    }
}

/// Finds the probe sequence number in a raw `stateChanged` line: the digits after
/// `"probe":"`, without parsing the JSON.
enum ProbeScanner {
    static let marker = Array(#""probe":""#.utf8)

    /// The sequence number in `line`, nil when the line carries no probe.
    static func sequence(in line: UnsafeRawBufferPointer) -> Int? { number(after: marker, in: line) }

    /// The decimal number (at most 12 digits) right after the first `key` in `line`; nil when
    /// `key` does not occur or no digit follows it.
    static func number(after key: [UInt8], in line: UnsafeRawBufferPointer) -> Int? {
        guard line.count > key.count, let found = find(key, in: line) else { return nil }
        var index = found + key.count
        var value = 0
        var digits = 0
        while index < line.count, digits < 12 {
            let byte = line[index]
            guard byte >= 0x30, byte <= 0x39 else { break }
            value = value * 10 + Int(byte - 0x30)
            digits += 1
            index += 1
        }
        return digits > 0 ? value : nil
    }

    /// The offset of the first occurrence of `needle` in `haystack` (memchr for its first
    /// byte, then memcmp; Glibc's memmem is not visible to Swift).
    static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard let base = haystack.baseAddress, let first = needle.first else { return nil }
        return needle.withUnsafeBufferPointer { pattern -> Int? in
            var offset = 0
            while offset + pattern.count <= haystack.count {
                guard let hit = memchr(base + offset, Int32(first), haystack.count - offset - pattern.count + 1) else { return nil }
                let position = UnsafeRawPointer(hit) - base
                if memcmp(base + position, pattern.baseAddress!, pattern.count) == 0 { return position }
                offset = position + 1
            }
            return nil
        }
    }
}
