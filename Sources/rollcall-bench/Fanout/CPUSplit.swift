import Foundation

/// A process's user and kernel CPU seconds, read apart from `/proc/PID/stat` (fields 14 and
/// 15), to show how much of the broker's cost per delivery is in the kernel (socket writes).
struct CPUSplit {
    let user: Double
    let system: Double

    /// The current reading for `pid`, nil when the process is gone.
    static func read(pid: Int32) -> CPUSplit? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return CPUSplit(user: user / ticks, system: system / ticks)
    }
}
