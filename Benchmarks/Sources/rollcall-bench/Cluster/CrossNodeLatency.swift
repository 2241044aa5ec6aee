import Foundation
import RollcallClient
import RollcallProtocol

/// setState on node A → stateChanged on every node: `members` sessions of one quiet
/// announce-mode channel spread over the nodes; member 0 (on node A) sets `{"probe": "<n>"}`
/// at `rate` per second, every other member times the arrival, grouped by its node.
final class CrossNodeLatency {
    /// Latencies (ms) received on one node.
    final class Samples: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Double] = []
        func add(_ value: Double) { lock.lock(); values.append(value); lock.unlock() }
        var sorted: [Double] { lock.lock(); defer { lock.unlock() }; return values.sorted() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return values.count }
    }

    let group: NodeGroup
    let members: Int
    let probes: Int
    let rate: Double

    init(group: NodeGroup, members: Int, probes: Int, rate: Double) {
        self.group = group
        self.members = members
        self.probes = probes
        self.rate = rate
    }

    /// Latency samples per node (index 0 is node A, the prober's).
    func measure() throws -> [[Double]] {
        let clock = ProbeTimes(capacity: probes)
        let perNode = (0..<group.nodes.count).map { _ in Samples() }
        let nodeCount = group.nodes.count
        let spread = try SpreadSessions(urls: group.urls, count: members, label: "latency \(group.label)",
                                        userId: { "lat-\($0)" }) { index, connection in
            guard index > 0 else { connection.onRawEvent = { _ in }; return }
            let samples = perNode[index % nodeCount]
            connection.onRawEvent = { line in
                if let sequence = ProbeScanner.sequence(in: line), let sent = clock[sequence] {
                    samples.add((MonotonicSeconds.now - sent) * 1000)
                }
            }
        }
        defer { spread.shutdown() }
        let channel = "lat:quiet"
        let joined = spread.requestAll("join", Array(0..<members), timeout: 30) { _ in
            ["channel": .string(channel), "presence": true, "messages": false]
        }
        guard joined.failed == 0 else { throw StormError("latency: \(joined.failed) joins failed") }
        spread.waitQuiet(quiet: 0.5)
        let prober = spread.sessions[0]
        let start = MonotonicSeconds.now
        for sequence in 0..<probes {
            let due = start + Double(sequence) / rate
            while MonotonicSeconds.now < due { usleep(UInt32(max(100, min(5000, (due - MonotonicSeconds.now) * 1e6)))) }
            clock.stamp(sequence)
            prober.send(Op.setState.rawValue, ["channel": .string(channel), "state": ["probe": .string(String(sequence))]])
        }
        // Every probe reaches members − 1 receivers; wait (bounded) for the last ones.
        let expected = probes * (members - 1)
        let deadline = MonotonicSeconds.now + 10
        while perNode.reduce(0, { $0 + $1.count }) < expected, MonotonicSeconds.now < deadline { usleep(50_000) }
        return perNode.map(\.sorted)
    }
}

/// Send times of probes by sequence number (monotonic seconds).
final class ProbeTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [Double]

    init(capacity: Int) { times = Array(repeating: -1, count: capacity) }

    func stamp(_ sequence: Int) {
        let now = MonotonicSeconds.now
        lock.lock(); if times.indices.contains(sequence) { times[sequence] = now }; lock.unlock()
    }

    subscript(sequence: Int) -> Double? {
        lock.lock(); defer { lock.unlock() }
        guard times.indices.contains(sequence), times[sequence] >= 0 else { return nil }
        return times[sequence]
    }
}

/// Percentiles of sorted values (nearest rank).
enum Percentile {
    static func of(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }
}
