import ArgumentParser

/// Where a scenario writes its results, shared by every scenario.
struct ReportOptions: ParsableArguments {
    @Option(help: "Write the results as JSON to this file.")
    var json: String?

    @Option(help: "Write an SVG chart of the run to this file.")
    var plot: String?

    @Flag(help: "The short version of the scenario (make bench): fewer sessions, shorter runs.")
    var quick = false

    @Option(help: "Client service threads generating load.")
    var threads = 2
}
