import Foundation

/// Reads counters from the broker's `GET /metrics` (Prometheus text) — e.g. frames and
/// objects written, to show how many objects one write carries.
struct MetricsScrape {
    let http: LoopbackHTTP

    /// For the broker at a `ws://127.0.0.1:PORT/v1` URL; nil for anything else.
    init?(url: String) {
        guard let http = LoopbackHTTP(url: url) else { return nil }
        self.http = http
    }

    /// The values of the named unlabelled counters; nil when the page cannot be read.
    func read(_ names: [String]) -> [String: Double]? {
        guard let text = http.get("/metrics")?.body else { return nil }
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, names.contains(String(parts[0])), let value = Double(parts[1]) else { continue }
            values[String(parts[0])] = value
        }
        return values
    }
}
