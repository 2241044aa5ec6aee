import Foundation

/// Where a process's resident memory is, from `/proc/PID/smaps_rollup` (Linux): anonymous
/// (heap, stacks, lws tables) against file-backed (code, libraries).
struct MemoryBreakdown {
    /// `Rss`, in KiB.
    var residentKiB = 0
    /// `Anonymous`, in KiB.
    var anonymousKiB = 0
    /// Resident file-backed pages (`Rss − Anonymous`), in KiB.
    var fileKiB: Int { residentKiB - anonymousKiB }

    /// Reads the rollup of `pid`; nil when it cannot be read.
    init?(pid: Int32) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let value = Int(fields[1]) else { continue }
            switch fields[0] {
            case "Rss:": residentKiB = value
            case "Anonymous:": anonymousKiB = value
            default: break
            }
        }
    }

    /// e.g. `rss 61.2 MiB (anonymous 52.0, file 9.2)`.
    var description: String {
        String(format: "rss %.1f MiB (anonymous %.1f, file-backed %.1f)",
               Double(residentKiB) / 1024, Double(anonymousKiB) / 1024, Double(fileKiB) / 1024)
    }
}
