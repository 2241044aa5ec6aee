import Prometheus

/// One time series: a metric name and its label pairs, in order.
struct SeriesKey: Hashable {
    let name: String
    let labels: [String]

    init(_ name: String, _ labels: [(String, String)]) {
        self.name = name
        self.labels = labels.flatMap { [$0.0, $0.1] }
    }
}

extension MetricNameDescriptor {
    /// A metric named exactly `name` (no namespace or unit appended) with `help` as its HELP line.
    static func named(_ name: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }
}
