import CoreMetrics
import Prometheus

/// Values the broker already counts (the core's ``BrokerMetrics``, the transport's
/// ``TransportMetrics``, gauges read off the state) moved into the registry at scrape time
/// through swift-metrics handles: a gauge is set, a counter advances by what it grew since
/// the last scrape. The hot path keeps plain integer increments; only `/metrics` pays.
final class ScrapedSeries {
    private let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private var meters: [SeriesKey: Meter] = [:]
    private var counters: [SeriesKey: CoreMetrics.Counter] = [:]
    private var exported: [SeriesKey: Int] = [:]

    init(registry: PrometheusCollectorRegistry, factory: PrometheusMetricsFactory) {
        self.registry = registry
        self.factory = factory
    }

    /// Sets the unlabelled gauge `name` to `value`.
    func gauge(_ name: String, _ help: String, _ value: Int) {
        gauge(name, help, [], value)
    }

    /// Sets the gauge `name{labels}` to `value`.
    func gauge(_ name: String, _ help: String, _ labels: [(String, String)], _ value: Int) {
        gauge(name, help, labels, Double(value))
    }

    /// Sets the gauge `name{labels}` to a fractional `value` (seconds, for one).
    func gauge(_ name: String, _ help: String, _ labels: [(String, String)], _ value: Double) {
        let key = SeriesKey(name, labels)
        let meter = meters[key] ?? {
            let handler = registry.makeGauge(descriptor: .named(name, help: help), labels: labels)
            let made = Meter(label: name, dimensions: labels, handler: handler, factory: factory)
            meters[key] = made
            return made
        }()
        meter.set(value)
    }

    /// Advances the counter `name{labels}` to `total` (a running total kept elsewhere).
    func counter(_ name: String, _ help: String, _ labels: [(String, String)] = [], total: Int) {
        let key = SeriesKey(name, labels)
        let counter = counters[key] ?? {
            let handler = registry.makeCounter(descriptor: .named(name, help: help), labels: labels)
            let made = CoreMetrics.Counter(label: name, dimensions: labels, handler: handler, factory: factory)
            counters[key] = made
            return made
        }()
        let grown = total - exported[key, default: 0]
        if grown > 0 {
            counter.increment(by: grown)
            exported[key] = total
        }
    }
}
