import Foundation

/// User and system CPU seconds of a process (`/proc/PID/stat` fields 14 and 15), kept apart
/// because the broker's cost splits very differently: its own code runs in user time, while
/// polling and socket writes for thousands of connections are system time. The one reader of
/// `/proc/PID/stat` (``ProcessSampler`` uses it too).
struct CPUTimes {
    var user = 0.0
    var system = 0.0

    var total: Double { user + system }

    /// The current times of `pid`, nil when the process is gone.
    static func read(pid: Int32) -> CPUTimes? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]), ticks > 0 else { return nil }
        return CPUTimes(user: user / ticks, system: system / ticks)
    }

    static func - (a: CPUTimes, b: CPUTimes) -> CPUTimes {
        CPUTimes(user: a.user - b.user, system: a.system - b.system)
    }
}
