import Foundation

/// RSS over time and the growth verdict of a soak run.
struct SoakReport: Encodable {
    let samples: [ProcessSample]
    let warmupFraction: Double
    let maxGrowthPercent: Double
    let sessions: Int
    let duration: Double
    let rate: Int
    let channels: Int
    let counters: [String: Int]

    /// RSS (KiB) at the end of warm-up: the first sample at or after `warmupFraction` of the run.
    var baselineKiB: Int {
        let cut = duration * warmupFraction
        return (samples.first { $0.elapsed >= cut } ?? samples.last)?.rssKiB ?? 0
    }

    /// RSS (KiB) at the end: the median of the last five samples (one-off spikes do not count).
    var finalKiB: Int {
        let tail = samples.suffix(5).map(\.rssKiB).sorted()
        return tail.isEmpty ? 0 : tail[tail.count / 2]
    }

    /// Largest RSS (KiB) after warm-up.
    var peakAfterWarmupKiB: Int {
        samples.filter { $0.elapsed >= duration * warmupFraction }.map(\.rssKiB).max() ?? 0
    }

    /// Growth from the end of warm-up to the end, in percent.
    var growthPercent: Double {
        baselineKiB == 0 ? 0 : Double(finalKiB - baselineKiB) * 100 / Double(baselineKiB)
    }

    var passed: Bool { !samples.isEmpty && growthPercent <= maxGrowthPercent }

    /// A Markdown table of about ten evenly spaced samples plus the verdict.
    func table() -> String {
        var lines = ["| t (s) | RSS (MiB) | broker CPU (s) |", "| ---: | ---: | ---: |"]
        let step = max(1, samples.count / 10)
        for (index, sample) in samples.enumerated() where index % step == 0 || index == samples.count - 1 {
            lines.append(String(format: "| %.0f | %.1f | %.1f |", sample.elapsed, Double(sample.rssKiB) / 1024, sample.cpuSeconds))
        }
        lines.append("")
        lines.append(String(format: "RSS after warm-up (%.0f%%): %.1f MiB; at the end: %.1f MiB; peak after warm-up: %.1f MiB",
                            warmupFraction * 100, Double(baselineKiB) / 1024, Double(finalKiB) / 1024,
                            Double(peakAfterWarmupKiB) / 1024))
        lines.append(String(format: "growth after warm-up: %+.2f%% (limit %.1f%%): %@", growthPercent, maxGrowthPercent,
                            passed ? "PASS" : "FAIL"))
        lines.append("operations: " + counters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        return lines.joined(separator: "\n")
    }

    private enum CodingKeys: String, CodingKey {
        case samples, warmupFraction, maxGrowthPercent, sessions, duration, rate, channels, counters
        case baselineKiB, finalKiB, growthPercent, passed
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(samples, forKey: .samples)
        try container.encode(warmupFraction, forKey: .warmupFraction)
        try container.encode(maxGrowthPercent, forKey: .maxGrowthPercent)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(duration, forKey: .duration)
        try container.encode(rate, forKey: .rate)
        try container.encode(channels, forKey: .channels)
        try container.encode(counters, forKey: .counters)
        try container.encode(baselineKiB, forKey: .baselineKiB)
        try container.encode(finalKiB, forKey: .finalKiB)
        try container.encode(growthPercent, forKey: .growthPercent)
        try container.encode(passed, forKey: .passed)
    }

    init(samples: [ProcessSample], warmupFraction: Double, maxGrowthPercent: Double, sessions: Int,
         duration: Double, rate: Int, channels: Int, counters: [String: Int]) {
        self.samples = samples; self.warmupFraction = warmupFraction; self.maxGrowthPercent = maxGrowthPercent
        self.sessions = sessions; self.duration = duration; self.rate = rate; self.channels = channels
        self.counters = counters
    }

    /// Writes the report as pretty JSON.
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
    }
}
