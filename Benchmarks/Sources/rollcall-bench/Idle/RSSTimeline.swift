import Foundation

/// Resident-set samples of the broker and of the bench itself over a scenario, taken once a
/// second, with a wait that ends when the broker's RSS has stopped moving.
final class RSSTimeline {
    private let broker: ProcessSampler
    private let bench = ProcessSampler(pid: getpid())
    private let start: Double
    /// `(seconds since start, broker RSS KiB, bench RSS KiB, broker CPU seconds)`.
    private(set) var points: [(elapsed: Double, brokerKiB: Int, benchKiB: Int, brokerCPU: Double)] = []

    init(brokerPID: Int32, start: Double = MonotonicSeconds.now) {
        broker = ProcessSampler(pid: brokerPID)
        self.start = start
    }

    /// Seconds since the timeline started.
    var elapsed: Double { MonotonicSeconds.now - start }

    /// Takes one sample of both processes; nil when the broker is gone.
    @discardableResult
    func sample(label: String) -> (brokerKiB: Int, benchKiB: Int)? {
        guard let brokerSample = broker.sample(elapsed: elapsed) else { return nil }
        let benchKiB = bench.residentKiB() ?? 0
        points.append((brokerSample.elapsed, brokerSample.rssKiB, benchKiB, brokerSample.cpuSeconds))
        print(String(format: "%@: t=%5.1fs broker rss=%8.1f MiB cpu=%6.2fs  bench rss=%8.1f MiB",
                     label, brokerSample.elapsed, Double(brokerSample.rssKiB) / 1024, brokerSample.cpuSeconds,
                     Double(benchKiB) / 1024))
        return (brokerSample.rssKiB, benchKiB)
    }

    /// Samples once a second for at least `minimum` seconds and then until the last
    /// `window` + 1 samples of the broker's RSS lie within `toleranceKiB` of each other, or
    /// `maximum` seconds have passed. Returns true when it settled.
    func waitUntilStable(minimum: Double, maximum: Double, window: Int, toleranceKiB: Int, label: String) -> Bool {
        let begin = MonotonicSeconds.now
        var recent: [Int] = []
        let steps = Int(maximum.rounded(.up)) + 1
        for _ in 0..<steps {
            guard let sample = sample(label: label) else { return false }
            recent.append(sample.brokerKiB)
            if recent.count > window + 1 { recent.removeFirst() }
            let waited = MonotonicSeconds.now - begin
            if waited >= minimum, recent.count == window + 1,
               let high = recent.max(), let low = recent.min(), high - low <= toleranceKiB {
                return true
            }
            if waited >= maximum { return false }
            usleep(1_000_000)
        }
        return false
    }

    /// The broker's timeline in MiB, for the chart.
    var brokerSeries: BenchSeries {
        BenchSeries(name: "broker RSS (MiB)", points: points.map { [$0.elapsed, Double($0.brokerKiB) / 1024] })
    }

    /// The bench's own timeline in MiB, for the chart.
    var benchSeries: BenchSeries {
        BenchSeries(name: "bench RSS (MiB)", points: points.map { [$0.elapsed, Double($0.benchKiB) / 1024] })
    }

    /// A one-line summary of the broker's timeline with at most `limit` points, e.g.
    /// `0s 11.2, 4s 40.3, …` (MiB).
    func summary(limit: Int = 16) -> String {
        guard !points.isEmpty else { return "(no samples)" }
        let stride = max(1, (points.count + limit - 1) / limit)
        var picked = Swift.stride(from: 0, to: points.count, by: stride).map { points[$0] }
        if let last = points.last, picked.last?.elapsed != last.elapsed { picked.append(last) }
        return picked.map { String(format: "%.0fs %.1f", $0.elapsed, Double($0.brokerKiB) / 1024) }
            .joined(separator: ", ")
    }
}
