import Foundation

/// One measured figure of a scenario, with its target when the issue sets one.
struct BenchMetric: Codable {
    /// What was measured, e.g. `broker CPU per delivery`.
    let name: String
    let value: Double
    /// `µs`, `KiB`, `/s`, `s`, `ms`, or empty for plain counts.
    let unit: String
    /// The target as text (`≤ 2`), nil when there is none.
    let target: String?
    /// Whether `value` meets the target, nil when there is none.
    let met: Bool?

    /// A figure with no target.
    init(_ name: String, _ value: Double, _ unit: String = "") {
        self.name = name; self.value = value; self.unit = unit; target = nil; met = nil
    }

    /// A figure with every field given (used when merging results).
    init(name: String, value: Double, unit: String, target: String?, met: Bool?) {
        self.name = name; self.value = value; self.unit = unit; self.target = target; self.met = met
    }

    /// A figure that must be at most `limit`.
    init(_ name: String, _ value: Double, _ unit: String, atMost limit: Double) {
        self.name = name; self.value = value; self.unit = unit
        target = "≤ \(BenchMetric.format(limit))"; met = value <= limit
    }

    /// A figure that must be at least `limit`.
    init(_ name: String, _ value: Double, _ unit: String, atLeast limit: Double) {
        self.name = name; self.value = value; self.unit = unit
        target = "≥ \(BenchMetric.format(limit))"; met = value >= limit
    }

    /// Compact text for a number: integers without decimals, others with three significant digits.
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        if abs(value) >= 100 { return String(format: "%.0f", value) }
        if abs(value) >= 10 { return String(format: "%.1f", value) }
        if abs(value) >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3g", value)
    }
}

/// A named series of points for the chart (`--plot`): x and y in the given units.
struct BenchSeries: Codable {
    let name: String
    let points: [[Double]]
}

/// What one scenario run produced: its figures, the command that produced them, the
/// broker's samples and free-form notes. Printed as a table, written as JSON, drawn as SVG.
struct BenchResult: Codable {
    let scenario: String
    /// The command line that produced it.
    let command: String
    /// ISO 8601 time of the run.
    let date: String
    var metrics: [BenchMetric] = []
    /// Chart title and axis labels, with the series to draw.
    var chartTitle = ""
    var xLabel = ""
    var yLabel = ""
    var series: [BenchSeries] = []
    var notes: [String] = []
    /// Raw counters for the JSON file.
    var counters: [String: Int] = [:]

    init(scenario: String) {
        self.scenario = scenario
        command = CommandLine.arguments.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
        date = ISO8601DateFormatter().string(from: Date())
    }

    /// True when every metric with a target met it.
    var allTargetsMet: Bool { metrics.allSatisfy { $0.met ?? true } }

    /// A Markdown table of the metrics.
    func table() -> String {
        var lines = ["| \(scenario) | value | target | |", "| --- | ---: | ---: | --- |"]
        for metric in metrics {
            let value = BenchMetric.format(metric.value) + (metric.unit.isEmpty ? "" : " \(metric.unit)")
            let verdict = metric.met.map { $0 ? "met" : "MISSED" } ?? ""
            lines.append("| \(metric.name) | \(value) | \(metric.target ?? "") | \(verdict) |")
        }
        for note in notes { lines.append("") ; lines.append(note) }
        return lines.joined(separator: "\n")
    }

    /// Prints the table and writes the JSON (and the SVG chart when `options.plot` is set).
    func finish(_ options: ReportOptions) throws {
        print("")
        print("command: \(command)")
        print(table())
        if let path = options.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(self).write(to: URL(fileURLWithPath: path))
            print("\(scenario): results written to \(path)")
        }
        if let path = options.plot {
            try SVGChart(result: self).render().write(toFile: path, atomically: true, encoding: .utf8)
            print("\(scenario): chart written to \(path)")
        }
    }
}
