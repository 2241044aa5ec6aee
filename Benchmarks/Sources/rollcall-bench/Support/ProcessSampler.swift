import Foundation

/// One reading of a process's memory and CPU from `/proc`.
struct ProcessSample: Codable {
    /// Seconds since the scenario started.
    let elapsed: Double
    /// Resident set size in KiB (`VmRSS` in `/proc/PID/status`).
    let rssKiB: Int
    /// CPU seconds (user + system) consumed so far (`/proc/PID/stat` fields 14 and 15).
    let cpuSeconds: Double
}

/// Reads `/proc/PID/status` and `/proc/PID/stat` (Linux).
struct ProcessSampler {
    let pid: Int32

    init(pid: Int32) { self.pid = pid }

    /// Resident set size in KiB, nil when the process is gone.
    func residentKiB() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
        }
        return nil
    }

    /// User + system CPU seconds, nil when the process is gone.
    func cpuSeconds() -> Double? { CPUTimes.read(pid: pid)?.total }

    /// Both readings at `elapsed` seconds.
    func sample(elapsed: Double) -> ProcessSample? {
        guard let rss = residentKiB(), let cpu = cpuSeconds() else { return nil }
        return ProcessSample(elapsed: elapsed, rssKiB: rss, cpuSeconds: cpu)
    }
}
