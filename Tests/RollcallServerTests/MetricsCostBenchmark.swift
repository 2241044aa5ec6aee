import CoreMetrics
import Foundation
import Prometheus
@testable import RollcallServer
import Testing

/// The cost of a histogram record on the hot path (one per frame written) and of rendering
/// `/metrics`: a micro-benchmark that prints figures, run on demand and never timed against a
/// threshold. `ROLLCALL_MICROBENCH=1 swift test -c release -Xswiftc -enable-testing --filter MetricsCost`
/// (figures in BENCHMARKS.md, "Metrics").
@Suite("MetricsCost", .enabled(if: ProcessInfo.processInfo.environment["ROLLCALL_MICROBENCH"] == "1"))
struct MetricsCostBenchmark {
    static let records = 5_000_000

    /// The CPU time this thread spent in `body`: on a shared machine, wall time would count
    /// the time other processes had the core.
    static func nanoseconds(_ body: () -> Void) -> UInt64 {
        let start = threadCPUNanoseconds()
        body()
        return threadCPUNanoseconds() - start
    }

    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    @Test("a histogram record and a page render")
    func histogramRecord() {
        let exposition = MetricsExposition()
        let recorder = exposition.histograms.frameBytes
        // The same histogram behind swift-metrics' Recorder: what the façade would cost.
        let registry = PrometheusCollectorRegistry()
        let histogram = registry.makeValueHistogram(descriptor: .named("facade", help: "facade"), buckets: ServerHistograms.byteBuckets)
        let facade = Recorder(label: "facade", dimensions: [], aggregate: true, handler: histogram,
                              factory: PrometheusMetricsFactory(registry: registry))
        var plain = TransportMetrics()
        for round in 1...3 {
            let recorded = Self.nanoseconds {
                for index in 0..<Self.records { recorder.record(Double(index & 0xFFFF)) }
            }
            let directly = Self.nanoseconds {
                for index in 0..<Self.records { facade.record(index & 0xFFFF) }
            }
            let counted = Self.nanoseconds {
                for index in 0..<Self.records { plain.bytesOut &+= index & 0xFFFF }
            }
            let requests = Self.nanoseconds {
                for index in 0..<Self.records { exposition.histograms.requestHandled(.op(.join), nanoseconds: UInt64(index & 0xFFF)) }
            }
            print("round \(round): ValueHistogram.record \(Double(recorded) / Double(Self.records)) ns, "
                + "through swift-metrics' Recorder \(Double(directly) / Double(Self.records)) ns, "
                + "requestHandled \(Double(requests) / Double(Self.records)) ns, "
                + "plain Int add \(Double(counted) / Double(Self.records)) ns (sum \(plain.bytesOut))")
        }
        var snapshot = MetricsSnapshot()
        snapshot.transport.httpResponses = [200: 10, 404: 1]
        snapshot.sessionEnds = ["logout": 3, "timeout": 1]
        _ = exposition.render(snapshot)
        let renders = 2000
        var bytes = 0
        let rendered = Self.nanoseconds {
            for index in 0..<renders {
                snapshot.transport.framesOut = index
                bytes = exposition.render(snapshot).count
            }
        }
        print("render: \(Double(rendered) / Double(renders) / 1000) µs per page of \(bytes) bytes")
    }
}
