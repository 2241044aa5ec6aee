import RollcallCore
import RollcallProtocol

/// Renders `/metrics` in the Prometheus text exposition format (version 0.0.4).
struct MetricsPage {
    private var text = ""

    /// The page for the transport's and the core's counters at this moment.
    /// `connectionCap` and `descriptorsInUse` describe the connection cap (``ConnectionCap``).
    static func render(transport: TransportMetrics, connectionsCurrent: Int, broker: Broker, accepting: Bool,
                       connectionCap: Int = 0, descriptorsInUse: Int = 0) -> String {
        var page = MetricsPage()
        page.gauge("rollcall_up", "1 while the broker accepts connections", accepting ? 1 : 0)
        page.gauge("rollcall_connections", "WebSocket connections open now", connectionsCurrent)
        page.counter("rollcall_connections_total", "WebSocket connections ever established", transport.connectionsTotal)
        let live = broker.directory.liveCount
        page.family("rollcall_sessions", "gauge", "Logged-in sessions, by state")
        page.sample("rollcall_sessions", ["state": "live"], live)
        page.sample("rollcall_sessions", ["state": "held"], broker.heldSessionCount)
        page.gauge("rollcall_users", "Users with at least one session (live or held)", broker.directory.userCount)
        page.gauge("rollcall_channels", "Channels with at least one member", broker.channelCount)
        page.gauge("rollcall_interval_flushes_pending", "Channels in interval mode with changes waiting for their next interval event",
                   broker.pendingIntervalFlushes)
        page.gauge("rollcall_subscriptions", "User-status subscriptions held", broker.subscriptionCount)
        page.counter("rollcall_logins_total", "Successful logins, resumes included", broker.metrics.logins)
        page.counter("rollcall_resumes_total", "Sessions resumed with a resume token", broker.metrics.resumes)
        page.counter("rollcall_requests_total", "Requests received", broker.metrics.requests)
        page.counter("rollcall_frames_in_total", "Complete text messages received", transport.framesIn)
        page.counter("rollcall_bytes_in_total", "Bytes of text messages received", transport.bytesIn)
        page.counter("rollcall_frames_out_total", "WebSocket frames written (batched)", transport.framesOut)
        page.counter("rollcall_objects_out_total", "JSON objects written (replies and events)", transport.objectsOut)
        page.counter("rollcall_bytes_out_total", "Payload bytes written", transport.bytesOut)

        page.family("rollcall_errors_total", "counter", "Error replies, by code")
        for code in ErrorCode.allCases {
            page.sample("rollcall_errors_total", ["code": code.rawValue], broker.metrics.errors[code] ?? 0)
        }
        page.counter("rollcall_slow_consumer_cuts_total", "Connections cut with 1013 (outbound queue over limits.maxOutboundBytes)",
                     transport.slowConsumerCuts)
        page.counter("rollcall_heartbeat_timeouts_total", "Connections dropped after heartbeat.timeoutSeconds of silence",
                     transport.heartbeatTimeouts)
        page.family("rollcall_protocol_closes_total", "counter", "Closes for a protocol fault, by close code")
        for code in [CloseCode.binaryFrame, .invalidUTF8, .frameTooBig] {
            page.sample("rollcall_protocol_closes_total", ["code": String(code.rawValue)], transport.protocolCloses[code.rawValue] ?? 0)
        }
        page.family("rollcall_session_ends_total", "counter", "Session ends (and holds), by kind")
        for (kind, count) in broker.metrics.sessionEnds.sorted(by: { $0.key < $1.key }) {
            page.sample("rollcall_session_ends_total", ["kind": kind], count)
        }
        page.family("rollcall_connection_ends_total", "counter", "WebSocket connections ended, as the transport saw it")
        for (kind, count) in transport.connectionEnds.sorted(by: { $0.key < $1.key }) {
            page.sample("rollcall_connection_ends_total", ["kind": kind], count)
        }
        page.counter("rollcall_upgrades_rejected_total", "WebSocket upgrades refused (path, origin, shutting down)",
                     transport.upgradesRejected)
        page.gauge("rollcall_connection_cap", "Connections served at once; above it new ones get 503 (open-file limit minus a reserve)",
                   connectionCap)
        page.gauge("rollcall_connection_descriptors", "Descriptors the connections hold now (accepted sockets of any kind plus files being sent)",
                   descriptorsInUse)
        page.counter("rollcall_connections_refused_total", "Connections refused by the connection cap (503, or closed at accept)",
                     transport.connectionsRefused)
        page.counter("rollcall_connections_closed_at_accept_total", "Of those, closed as soon as accepted (the 503 band was full)",
                     transport.connectionsClosedAtAccept)
        page.family("rollcall_http_responses_total", "counter", "HTTP responses, by status")
        for (status, count) in transport.httpResponses.sorted(by: { $0.key < $1.key }) {
            page.sample("rollcall_http_responses_total", ["status": String(status)], count)
        }
        return page.text
    }

    private mutating func gauge(_ name: String, _ help: String, _ value: Int) {
        family(name, "gauge", help)
        sample(name, [:], value)
    }

    private mutating func counter(_ name: String, _ help: String, _ value: Int) {
        family(name, "counter", help)
        sample(name, [:], value)
    }

    private mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    private mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Int) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.key)=\"\(Self.escape($0.value))\"" }.joined(separator: ",") + "}"
        }
        text += " \(value)\n"
    }

    private static func escape(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}
