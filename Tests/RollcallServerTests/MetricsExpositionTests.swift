import Foundation
import RollcallCore
@testable import RollcallServer
import RollcallProtocol
import Testing

@Suite("MetricsExposition")
struct MetricsExpositionTests {
    /// Every metric `/metrics` had before the move to swift-metrics (docs/operations.md).
    static let existingNames = [
        "rollcall_up", "rollcall_connections_open", "rollcall_connections", "rollcall_connections_total", "rollcall_sessions", "rollcall_users",
        "rollcall_channels", "rollcall_interval_flushes_pending", "rollcall_subscriptions", "rollcall_logins_total",
        "rollcall_resumes_total", "rollcall_requests_total", "rollcall_frames_in_total", "rollcall_bytes_in_total",
        "rollcall_frames_out_total", "rollcall_objects_out_total", "rollcall_bytes_out_total", "rollcall_errors_total",
        "rollcall_slow_consumer_cuts_total", "rollcall_heartbeat_timeouts_total", "rollcall_protocol_closes_total",
        "rollcall_session_ends_total", "rollcall_connection_ends_total", "rollcall_upgrades_rejected_total",
        "rollcall_connection_cap", "rollcall_connection_descriptors", "rollcall_connections_refused_total",
        "rollcall_connections_closed_at_accept_total", "rollcall_http_responses_total",
    ]

    func sampleSnapshot() -> MetricsSnapshot {
        var snapshot = MetricsSnapshot()
        snapshot.connections = 3
        snapshot.liveSessions = 2
        snapshot.heldSessions = 1
        snapshot.channels = 4
        snapshot.requests = 10
        snapshot.errors = [.unknownOp: 2]
        snapshot.sessionEnds = ["logout": 1]
        snapshot.transport.framesOut = 7
        snapshot.transport.connectionEnds = ["normal": 1]
        snapshot.transport.httpResponses = [200: 5, 404: 1]
        return snapshot
    }

    func render(_ exposition: MetricsExposition, _ snapshot: MetricsSnapshot) -> String {
        String(decoding: exposition.render(snapshot), as: UTF8.self)
    }

    @Test("every existing metric keeps its name and type")
    func existingMetrics() throws {
        let page = try ExpositionPage(render(MetricsExposition(), sampleSnapshot()))
        for name in Self.existingNames {
            #expect(page.types[name] != nil, "missing \(name)")
        }
        #expect(page.types["rollcall_connections_open"] == "gauge")
        #expect(page.types["rollcall_connections"] == "gauge", "deprecated in 1.2, kept for one version")
        #expect(page.types["rollcall_frames_out_total"] == "counter")
        #expect(page.value("rollcall_connections_open") == 3)
        #expect(page.value("rollcall_connections") == 3)
        #expect(page.value("rollcall_sessions{state=\"live\"}") == 2)
        #expect(page.value("rollcall_sessions{state=\"held\"}") == 1)
        #expect(page.value("rollcall_errors_total{code=\"UNKNOWN_OP\"}") == 2)
        #expect(page.value("rollcall_errors_total{code=\"INTERNAL\"}") == 0)
        #expect(page.value("rollcall_http_responses_total{status=\"404\"}") == 1)
        #expect(page.value("rollcall_protocol_closes_total{code=\"1009\"}") == 0)
    }

    @Test("the histograms are on the page from the start, with their buckets")
    func histogramsPresent() throws {
        let exposition = MetricsExposition()
        exposition.histograms.frameBytes.record(Double(300))
        exposition.histograms.queuedBytesAtWrite.record(Double(5000))
        exposition.histograms.eventRecipients.record(Double(3))
        exposition.histograms.requestHandled(.op(.join), nanoseconds: 3_000)
        let page = try ExpositionPage(render(exposition, sampleSnapshot()))
        for name in [ServerHistograms.frameBytesName, ServerHistograms.queuedBytesName, ServerHistograms.recipientsName,
                     ServerHistograms.requestDurationName] {
            #expect(page.types[name] == "histogram", "missing \(name)")
        }
        #expect(page.value("rollcall_frame_out_bytes_bucket{le=\"256.0\"}") == 0)
        #expect(page.value("rollcall_frame_out_bytes_bucket{le=\"1024.0\"}") == 1)
        #expect(page.value("rollcall_frame_out_bytes_bucket{le=\"+Inf\"}") == 1)
        #expect(page.value("rollcall_frame_out_bytes_sum") == 300)
        #expect(page.value("rollcall_outbound_queue_at_write_bytes_count") == 1)
        // The name before 1.2, copied from the new family for one version.
        #expect(page.types["rollcall_outbound_queue_bytes_at_write"] == "histogram")
        #expect(page.value("rollcall_outbound_queue_bytes_at_write_count") == 1)
        #expect(page.value("rollcall_outbound_queue_bytes_at_write_bucket{le=\"16384.0\"}") == 1)
        #expect(page.value("rollcall_outbound_queue_bytes_at_write_bucket{le=\"4096.0\"}") == 0)
        #expect(page.value("rollcall_event_recipients_bucket{le=\"5.0\"}") == 1)
        #expect(page.value("rollcall_request_duration_seconds_count{op=\"join\"}") == 1)
        #expect(page.value("rollcall_request_duration_seconds_bucket{op=\"join\",le=\"+Inf\"}") == 1)
    }

    @Test("op labels: an Op by its name, invalid, unknown, api.<op> and api.unknown")
    func requestOpLabels() throws {
        let exposition = MetricsExposition()
        exposition.histograms.requestHandled(.invalid, nanoseconds: 1)
        exposition.histograms.requestHandled(.unknown, nanoseconds: 1)
        exposition.histograms.requestHandled(.op(.getOnlineUsers), nanoseconds: 1)
        exposition.histograms.requestHandled(.op(.getOnlineUsers), nanoseconds: 1)
        exposition.histograms.requestHandled(.api(.getInfo), nanoseconds: 1)
        exposition.histograms.requestHandled(.api(nil), nanoseconds: 1)
        let page = try ExpositionPage(render(exposition, MetricsSnapshot()))
        #expect(page.value("rollcall_request_duration_seconds_count{op=\"invalid\"}") == 1)
        #expect(page.value("rollcall_request_duration_seconds_count{op=\"unknown\"}") == 1)
        #expect(page.value("rollcall_request_duration_seconds_count{op=\"getOnlineUsers\"}") == 2)
        #expect(page.value("rollcall_request_duration_seconds_count{op=\"api.getInfo\"}") == 1)
        #expect(page.value("rollcall_request_duration_seconds_count{op=\"api.unknown\"}") == 1)
        #expect(Op.allCases.map { RequestLabel.op($0).text } == Op.allCases.map(\.rawValue))
    }

    @Test("counters follow the running totals across scrapes; gauges follow the state")
    func scrapesFollowTotals() throws {
        let exposition = MetricsExposition()
        var snapshot = sampleSnapshot()
        _ = render(exposition, snapshot)
        snapshot.transport.framesOut = 12
        snapshot.errors[.unknownOp] = 5
        snapshot.connections = 1
        snapshot.transport.httpResponses[503] = 1
        let page = try ExpositionPage(render(exposition, snapshot))
        #expect(page.value("rollcall_frames_out_total") == 12)
        #expect(page.value("rollcall_errors_total{code=\"UNKNOWN_OP\"}") == 5)
        #expect(page.value("rollcall_connections_open") == 1)
        #expect(page.value("rollcall_http_responses_total{status=\"503\"}") == 1)
    }

    @Test("the last frame's time is in seconds; build info and the process_* families are on the page")
    func buildAndProcess() throws {
        var snapshot = sampleSnapshot()
        snapshot.transport.lastFrameWrittenAt = 1_795_000_000_123
        let page = try ExpositionPage(render(MetricsExposition(), snapshot))
        #expect(page.value("rollcall_last_frame_written_timestamp_seconds") == 1_795_000_000.123)
        #expect(page.types["rollcall_last_frame_written_timestamp_milliseconds"] == nil, "promtool refuses the unit")
        let info = page.samples.keys.first { $0.hasPrefix("rollcall_build_info{") } ?? ""
        #expect(info.contains("version=\"\(BrokerVersion.current)\"") && info.contains("libwebsockets=\""), "\(info)")
        #expect(page.value(info) == 1)
        for name in ["process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
                     "process_start_time_seconds", "process_open_fds", "process_max_fds"] {
            #expect((page.value(name) ?? 0) > 0, "\(name)")
        }
        #expect(page.types["process_cpu_seconds_total"] == "counter")
        let started = page.value("process_start_time_seconds") ?? 0
        #expect(abs(started - Date().timeIntervalSince1970) < 3600 * 24, "started within a day: \(started)")
    }

    @Test("/proc/self/stat: fields counted after the command name, which may hold spaces and parentheses")
    func statParsing() {
        let stat = "42 (my (odd) cmd) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 123456789 2048 18446744073709551615"
        let parsed = ProcessMetrics.parse(stat: stat, ticksPerSecond: 100, pageSize: 4096, bootTime: 1_700_000_000,
                                          openDescriptors: 7, maxDescriptors: 1024)
        #expect(parsed == ProcessMetrics(cpuSeconds: 3, residentBytes: 2048 * 4096, virtualBytes: 123_456_789,
                                         startTimeSeconds: 1_700_000_010, openDescriptors: 7, maxDescriptors: 1024))
    }

    @Test("two servers in one process keep separate registries")
    func registryPerServer() throws {
        let first = MetricsExposition(), second = MetricsExposition()
        first.histograms.frameBytes.record(Double(10))
        var snapshot = MetricsSnapshot()
        snapshot.transport.framesOut = 9
        _ = render(first, snapshot)
        let page = try ExpositionPage(render(second, MetricsSnapshot()))
        #expect(page.value("rollcall_frame_out_bytes_count") == 0)
        #expect(page.value("rollcall_frames_out_total") == 0)
    }
}

/// A strict reader of the Prometheus text format (0.0.4): every line is `# HELP`, `# TYPE`
/// or a sample of a family typed before it, with a number as its value.
struct ExpositionPage {
    let text: String
    private(set) var types: [String: String] = [:]
    private(set) var samples: [String: Double] = [:]

    struct FormatError: Error, CustomStringConvertible {
        let description: String
    }

    init(_ text: String) throws {
        self.text = text
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { continue }
            if line.hasPrefix("# HELP ") { continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram"].contains(parts[3]) else {
                    throw FormatError(description: "bad TYPE line: \(line)")
                }
                guard types[String(parts[2])] == nil else { throw FormatError(description: "TYPE twice: \(line)") }
                types[String(parts[2])] = String(parts[3])
                continue
            }
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw FormatError(description: "bad sample: \(line)")
            }
            let series = String(line[..<space])
            let name = String(series.prefix { $0 != "{" })
            let family = types[name] != nil ? name
                : ["_bucket", "_sum", "_count"].compactMap { suffix in
                    name.hasSuffix(suffix) ? String(name.dropLast(suffix.count)) : nil
                }.first { types[$0] == "histogram" }
            guard family != nil else { throw FormatError(description: "sample before its TYPE: \(line)") }
            guard name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }) else {
                throw FormatError(description: "bad name: \(line)")
            }
            samples[series] = value
        }
    }

    func value(_ series: String) -> Double? { samples[series] }
}
