import Foundation

/// A process's CPU time in nanoseconds, from `/proc/PID/task/*/schedstat` (time on a CPU per
/// thread, added up): the cost of a few hundred ops is a few clock ticks, too coarse for
/// `/proc/PID/stat`, but schedstat counts nanoseconds. User and system time together.
enum ThreadCPU {
    /// Seconds on a CPU of every live thread of `pid`; falls back to ``CPUTimes`` when
    /// schedstat is not there, nil when the process is gone.
    static func seconds(pid: Int32) -> Double? {
        let taskDirectory = "/proc/\(pid)/task"
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: taskDirectory) else { return nil }
        var nanoseconds: UInt64 = 0
        for thread in threads {
            guard let text = try? String(contentsOfFile: "\(taskDirectory)/\(thread)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let value = UInt64(first) else {
                return CPUTimes.read(pid: pid)?.total
            }
            nanoseconds += value
        }
        return Double(nanoseconds) / 1e9
    }
}
