import Foundation

/// One run of a fault: the moment of the fault, then each named mark's first time (seconds
/// from the fault), in the order first marked, plus free-text facts (counts, what was lost).
final class Timeline: @unchecked Sendable {
    private let lock = NSLock()
    private var fault: Double
    private var order: [String] = []
    private var seconds: [String: Double] = [:]
    private(set) var facts: [String: String] = [:]

    init() { fault = MonotonicSeconds.now }

    /// Monotonic time of the fault (the mark 0).
    var faultAt: Double { lock.withLock { fault } }

    /// Sets the fault's moment to now (call just before injecting it).
    func faultNow() { lock.withLock { fault = MonotonicSeconds.now } }

    /// Notes `name` at `time` (monotonic; now by default) unless it was noted already.
    func mark(_ name: String, at time: Double = MonotonicSeconds.now) {
        lock.lock(); defer { lock.unlock() }
        guard seconds[name] == nil else { return }
        if !order.contains(name) { order.append(name) }
        seconds[name] = time - fault
    }

    /// Declares `name` in the table even if it is never marked (shown as "never").
    func expect(_ name: String) {
        lock.lock(); defer { lock.unlock() }
        if !order.contains(name) { order.append(name) }
    }

    /// True once `name` was marked.
    func has(_ name: String) -> Bool { lock.lock(); defer { lock.unlock() }; return seconds[name] != nil }

    /// Records a fact of this run (the last value given wins).
    func note(_ name: String, _ value: String) { lock.lock(); defer { lock.unlock() }; facts[name] = value }

    /// The marks in their order, nil for one never marked.
    var marks: [(name: String, seconds: Double?)] {
        lock.lock(); defer { lock.unlock() }
        return order.map { ($0, seconds[$0]) }
    }
}

/// Several runs of one fault as a Markdown table: per mark the median and the range over the
/// runs, and each run's value; the facts of each run below it.
struct TimelineTable: Codable {
    /// One mark's row.
    struct Row: Codable {
        let mark: String
        /// Seconds from the fault in each run (nil: never within the run's wait).
        let runs: [Double?]
    }

    let title: String
    var rows: [Row] = []
    var facts: [[String: String]] = []

    init(title: String, runs: [Timeline]) {
        self.title = title
        var names: [String] = []
        for run in runs { for mark in run.marks where !names.contains(mark.name) { names.append(mark.name) } }
        rows = names.map { name in
            Row(mark: name, runs: runs.map { run in run.marks.first { $0.name == name }?.seconds ?? nil })
        }
        facts = runs.map(\.facts)
    }

    /// The table and the facts, in Markdown.
    var markdown: String {
        let count = facts.count
        var lines = ["### \(title)", "",
                     "| seconds from the fault | median | range | " + (1...max(count, 1)).map { "run \($0)" }.joined(separator: " | ") + " |",
                     "| --- | ---: | ---: | " + Array(repeating: "---:", count: max(count, 1)).joined(separator: " | ") + " |"]
        for row in rows {
            let seen = row.runs.compactMap { $0 }.sorted()
            let median = seen.isEmpty ? "never" : Self.format(Self.median(seen)) + (seen.count < row.runs.count ? " (\(seen.count)/\(row.runs.count) runs)" : "")
            let range = seen.isEmpty ? "—" : "\(Self.format(seen.first!))–\(Self.format(seen.last!))"
            let each = row.runs.map { $0.map(Self.format) ?? "never" }.joined(separator: " | ")
            lines.append("| \(row.mark) | \(median) | \(range) | \(each) |")
        }
        lines.append("")
        for (index, run) in facts.enumerated() where !run.isEmpty {
            lines.append("- run \(index + 1): " + run.keys.sorted().map { "\($0): \(run[$0]!)" }.joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }

    static func median(_ sorted: [Double]) -> Double {
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
