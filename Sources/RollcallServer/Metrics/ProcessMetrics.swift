import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The standard `process_*` metrics of Prometheus' client libraries, read from `/proc` at each
/// scrape (Linux; elsewhere every value is absent and nothing is written):
/// `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
/// `process_open_fds`, `process_max_fds` and `process_start_time_seconds`.
struct ProcessMetrics: Equatable {
    /// User plus system CPU time, in seconds.
    var cpuSeconds: Double
    var residentBytes: Double
    var virtualBytes: Double
    var startTimeSeconds: Double
    var openDescriptors: Double
    var maxDescriptors: Double

    /// The process's figures now, nil when `/proc` cannot be read.
    static func current() -> ProcessMetrics? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let bootTime = bootTimeSeconds() else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return parse(stat: stat, ticksPerSecond: ticks, pageSize: pageSize, bootTime: bootTime,
                     openDescriptors: descriptors, maxDescriptors: Double(limit.rlim_cur))
    }

    /// The figures in a `/proc/self/stat` line. The command name (field 2) is in parentheses
    /// and may hold spaces, so fields are counted after its closing parenthesis.
    static func parse(stat: String, ticksPerSecond: Double, pageSize: Double, bootTime: Double,
                      openDescriptors: Int, maxDescriptors: Double) -> ProcessMetrics? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        // After ")": field 3 (state) is index 0, so field N is index N - 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23),
              let rss = field(24), ticksPerSecond > 0 else { return nil }
        return ProcessMetrics(
            cpuSeconds: (utime + stime) / ticksPerSecond, residentBytes: rss * pageSize, virtualBytes: vsize,
            startTimeSeconds: bootTime + start / ticksPerSecond, openDescriptors: Double(openDescriptors),
            maxDescriptors: maxDescriptors)
    }

    /// The `btime` of `/proc/stat`: when the machine booted, in Unix seconds.
    static func bootTimeSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// The families in the text format, appended to `page`.
    func render(into page: inout [UInt8]) {
        let families: [(String, String, String, Double)] = [
            ("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpuSeconds),
            ("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", residentBytes),
            ("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", virtualBytes),
            ("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", startTimeSeconds),
            ("process_open_fds", "gauge", "Number of open file descriptors.", openDescriptors),
            ("process_max_fds", "gauge", "Maximum number of open file descriptors.", maxDescriptors),
        ]
        for (name, type, help, value) in families {
            MetricsText.family(name, type: type, help: help, samples: [("", value)], into: &page)
        }
    }
}

/// Families written straight in the text format (0.0.4), beside the registry's.
enum MetricsText {
    /// `# HELP`, `# TYPE`, then one sample per entry (`labels` already rendered: `{a="b"}` or empty).
    static func family(_ name: String, type: String, help: String, samples: [(labels: String, value: Double)],
                       into page: inout [UInt8]) {
        var text = "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for sample in samples { text += "\(name)\(sample.labels) \(number(sample.value))\n" }
        page.append(contentsOf: text.utf8)
    }

    /// A sample value: integers without a fraction, others as Swift prints them.
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// A label value escaped for the text format (backslash, double quote, newline).
    static func escaped(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
