import ArgumentParser
import Foundation

/// `rollcall-bench summary FILE...`: merges the `--json` results of several runs into one
/// table of every figure that has a target, and draws them as bars against their targets
/// (`--plot`), as BENCHMARKS.md shows.
struct Summary: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Merge scenario results (--json files) into one table and a targets chart.")

    @Argument(help: "Result files written by the scenarios' --json.")
    var files: [String]

    @Option(help: "Write the merged results as JSON to this file.")
    var json: String?

    @Option(help: "Write the targets chart (SVG) to this file.")
    var plot: String?

    func run() throws {
        var summary = BenchResult(scenario: "summary")
        summary.chartTitle = "rollcall-bench: every figure with a target (bar = value / target)"
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: file))
            let result = try JSONDecoder().decode(BenchResult.self, from: data)
            for metric in result.metrics where metric.target != nil && !metric.isCorrectnessCheck {
                summary.metrics.append(metric.renamed("\(result.scenario): \(metric.name)"))
            }
        }
        var options = ReportOptions()
        options.json = json
        options.plot = plot
        try summary.finish(options)
    }
}

extension BenchMetric {
    /// Counters a run checks rather than measures (disconnects ≤ 0, answered ≥ requested,
    /// a listing that equals the truth): kept in each scenario's table, left out of the summary.
    var isCorrectnessCheck: Bool {
        target == "≤ 0" || target == "≥ 1" || name.contains("answered ok")
    }

    /// The same figure under another name.
    func renamed(_ newName: String) -> BenchMetric {
        BenchMetric(name: newName, value: value, unit: unit, target: target, met: met)
    }
}
