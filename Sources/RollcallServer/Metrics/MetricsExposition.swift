import CRollcallShim
import CoreMetrics
import Prometheus
import RollcallCore
import RollcallProtocol

/// `/metrics`: one Prometheus registry per server (no global `MetricsSystem.bootstrap`, so two
/// servers in one process keep their own figures), rendered in the Prometheus text
/// exposition format (version 0.0.4). Scrape-time series go through swift-metrics handles
/// (``ScrapedSeries``); the histograms are the registry's own (``ServerHistograms``).
///
/// The live histograms (``ServerHistograms``) record as things happen; everything else is a
/// running total or a gauge read off the broker at scrape time (``MetricsSnapshot``).
final class MetricsExposition {
    /// The content type of the page.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The histograms recorded on the hot path; also the core's ``BrokerInstrumentation``.
    let histograms: ServerHistograms
    private let registry = PrometheusCollectorRegistry()
    private let series: ScrapedSeries

    init() {
        let factory = PrometheusMetricsFactory(registry: registry)
        histograms = ServerHistograms(registry: registry)
        series = ScrapedSeries(registry: registry, factory: factory)
    }

    /// The page for `snapshot`, with the histograms as recorded so far.
    func render(_ snapshot: MetricsSnapshot) -> [UInt8] {
        update(snapshot)
        var page: [UInt8] = []
        page.reserveCapacity(16 * 1024)
        registry.emit(into: &page)
        Self.appendDeprecatedAliases(of: page, into: &page)
        Self.appendBuildInfo(into: &page)
        ProcessMetrics.current()?.render(into: &page)
        return page
    }

    /// Families renamed in 1.2 and still written under their old name, with the same samples,
    /// for one version (docs/operations.md, "Deprecated metric names"). Copied from the page at
    /// scrape time, so the hot path records each histogram once.
    static let deprecatedAliases: [(current: String, old: String)] = [
        (ServerHistograms.queuedBytesName, ServerHistograms.deprecatedQueuedBytesName),
    ]

    /// Appends, for each of ``deprecatedAliases``, the lines of its current family renamed.
    static func appendDeprecatedAliases(of rendered: [UInt8], into page: inout [UInt8]) {
        let lines = rendered.split(separator: UInt8(ascii: "\n"))
        for alias in deprecatedAliases {
            let current = Array(alias.current.utf8)
            for line in lines {
                let start = line.starts(with: "# HELP ".utf8) || line.starts(with: "# TYPE ".utf8) ? line.startIndex + 7 : line.startIndex
                let rest = line[start...]
                guard rest.starts(with: current) else { continue }
                let after = rest.dropFirst(current.count).first
                guard after == UInt8(ascii: " ") || after == UInt8(ascii: "_") || after == UInt8(ascii: "{") else { continue }
                page.append(contentsOf: line[..<start])
                page.append(contentsOf: alias.old.utf8)
                page.append(contentsOf: rest.dropFirst(current.count))
                page.append(UInt8(ascii: "\n"))
            }
        }
    }

    /// `rollcall_build_info{version, libwebsockets, swift} 1`.
    static func appendBuildInfo(into page: inout [UInt8]) {
        let labels = [("version", BrokerVersion.current), ("libwebsockets", libwebsocketsVersion), ("swift", swiftVersion)]
            .map { "\($0.0)=\"\(MetricsText.escaped($0.1))\"" }.joined(separator: ",")
        MetricsText.family("rollcall_build_info", type: "gauge", help: "Always 1; the labels say which build this is",
                           samples: [("{\(labels)}", 1)], into: &page)
    }

    /// The libwebsockets the broker runs on (`lws_get_library_version`, e.g. `4.3.3-unknown`).
    static let libwebsocketsVersion = String(cString: lws_get_library_version())

    /// The Swift compiler that built the broker (major.minor).
    static let swiftVersion: String = {
        #if compiler(>=6.4)
        return "6.4+"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }()

    /// The webhook series (only while webhooks are on).
    private func updateWebhooks(_ w: WebhookMetrics) {
        let c = w.counters
        series.counter("rollcall_webhook_events_queued_total", "Events handed to the webhook queue", total: c.queued)
        series.counter("rollcall_webhook_events_delivered_total", "Webhook events acknowledged with a 2xx", total: c.deliveredEvents)
        series.counter("rollcall_webhook_batches_delivered_total", "Webhook batches acknowledged with a 2xx", total: c.deliveredBatches)
        series.counter("rollcall_webhook_attempts_failed_total",
                       "Webhook POSTs that failed (non-2xx, timeout, connection error); each retry counts", total: c.failedAttempts)
        let dropped = "Webhook events dropped, by reason"
        series.counter("rollcall_webhook_events_dropped_total", dropped, [("reason", WebhookDropReason.overflow.rawValue)],
                       total: c.droppedOverflow)
        series.counter("rollcall_webhook_events_dropped_total", dropped, [("reason", WebhookDropReason.retriesExhausted.rawValue)],
                       total: c.droppedRetriesExhausted)
        series.gauge("rollcall_webhook_queue_events", "Webhook events waiting (besides the batch in flight; cluster mode: in the Redis stream)", w.waitingEvents)
    }

    /// Logins and refreshes refused for their token, one series per stable reason (jwt mode).
    private func updateTokenRefusals(_ s: MetricsSnapshot) {
        for reason in Authenticators.refusalReasons {
            series.counter("rollcall_logins_refused_total", "Logins refused for their token (UNAUTHORIZED, close 4401), by reason",
                           [("reason", reason)], total: s.loginRefusals[reason] ?? 0)
            series.counter("rollcall_token_refreshes_refused_total", "refresh requests refused for their token (UNAUTHORIZED), by reason",
                           [("reason", reason)], total: s.refreshRefusals[reason] ?? 0)
        }
    }

    /// The JWK Sets of `auth.jwksFile` and `auth.jwksUrl`, by source (only those configured).
    private func updateKeySets(_ sets: [KeySetMetrics]) {
        for set in sets {
            let labels = [("source", set.source.rawValue)]
            series.counter("rollcall_jwks_refreshes_total",
                           "Key set documents read or fetched that replaced the keys (the one at start included), by source",
                           labels, total: set.refreshes)
            series.counter("rollcall_jwks_refresh_failures_total",
                           "Key set reads or fetches that failed or did not hold a usable key set (the keys in force stayed), by source",
                           labels, total: set.failures)
            series.gauge("rollcall_jwks_keys", "Usable keys of the key set in force, by source", labels, set.usableKeys)
        }
    }

    private func update(_ s: MetricsSnapshot) {
        let t = s.transport, core = s
        series.gauge("rollcall_up", "1 while the broker accepts connections", s.accepting ? 1 : 0)
        series.gauge("rollcall_connections_open", "WebSocket connections open now", s.connections)
        // Deprecated in 1.2 (shares an OpenMetrics family with rollcall_connections_total).
        series.gauge("rollcall_connections", "Deprecated: rollcall_connections_open", s.connections)
        series.counter("rollcall_connections_total", "WebSocket connections ever established", total: t.connectionsTotal)
        let sessions = "Logged-in sessions, by state"
        series.gauge("rollcall_sessions", sessions, [("state", "live")], s.liveSessions)
        series.gauge("rollcall_sessions", sessions, [("state", "held")], s.heldSessions)
        series.gauge("rollcall_users", "Users with at least one session (live or held)", s.users)
        series.gauge("rollcall_channels", "Channels with at least one member", s.channels)
        series.gauge("rollcall_interval_flushes_pending",
                     "Channels in interval mode with changes waiting for their next interval event", s.intervalFlushesPending)
        series.gauge("rollcall_subscriptions", "User-status subscriptions held", s.subscriptions)
        if let cluster = s.cluster {
            series.gauge("rollcall_cluster_nodes", "Live nodes of the cluster this node sees, itself included", cluster.nodes)
            series.gauge("rollcall_redis_connected", "1 while this node reaches the cluster's Redis, else 0", cluster.redisConnected ? 1 : 0)
            series.counter("rollcall_redis_master_changes_total",
                           "Times this node's Redis link came back at another address (a Sentinel failover, or a host name that moved)",
                           total: cluster.redisAddressChanges)
            series.counter("rollcall_cluster_data_losses_total",
                           "Times this node found the cluster's data in Redis lost (emptied) or rolled back by a failover, and closed every session with 1012",
                           total: cluster.dataLosses)
            series.counter("rollcall_cluster_ends_finished_total",
                           "Session ends a node began and did not finish (it died), finished by this node's reaper",
                           total: core.clusterEndsFinished)
            series.counter("rollcall_cluster_steps_retried_total",
                           "Follow-up steps on another key group's slot (a leave's user indexes, a refence of fence copies) Redis did not answer, sent again at the next reaper tick",
                           total: core.clusterStepsRetried)
            series.counter("rollcall_cluster_catch_ups_lost_total",
                           "Catch-ups of other users' records (a login's or a resume's, read per key group) given up after Redis left every attempt unanswered",
                           total: core.clusterCatchUpsLost)
            series.counter("rollcall_cluster_repeated_messages_dropped_total",
                           "Message events heard a second time with the same number and publishing session (a publish run on a stale master and again on the new one), not delivered again",
                           total: core.clusterRepeatedMessagesDropped)
            series.counter("rollcall_cluster_sessions_lost_total",
                           "Local sessions whose record in Redis no longer named this node (gone, handed over, or another node's) while it was live, found after a change Redis refused, and closed with 1001",
                           total: core.clusterSessionsLostByNode)
            series.counter("rollcall_cluster_lost_records_ended_total",
                           "Sessions this node had whose record Redis no longer had (found at a refused change, or after a fence once the node was back; a failover may have lost it), taken out of the channels this node knew them in with timeout (idempotent)",
                           total: core.clusterLostRecordsEnded)
            series.counter("rollcall_cluster_events_rewritten_total",
                           "Presence events that came with the seq this node had delivered last but other bytes (Redis went back in time and used the number again); the channel was resynced with fresh snapshots",
                           total: core.clusterEventsRewritten)
        }
        series.gauge("rollcall_storage_healthy", "1 while durable writes succeed, 0 while they fail", s.storage.isHealthy ? 1 : 0)
        series.counter("rollcall_storage_write_failures_total", "Durable-store commits that failed", total: s.storage.writeFailures)
        series.counter("rollcall_storage_dropped_writes_total",
                       "Durable changes dropped because the retry queue was full (oldest first)", total: s.storage.droppedWrites)
        series.gauge("rollcall_storage_pending_writes", "Durable changes queued and not committed yet", s.storage.pendingWrites)
        series.counter("rollcall_logins_total", "Successful logins, resumes included", total: core.logins)
        series.counter("rollcall_resumes_total", "Sessions resumed with a resume token", total: core.resumes)
        series.counter("rollcall_token_refreshes_total", "Successful refresh requests (jwt mode)", total: core.tokenRefreshes)
        series.counter("rollcall_token_expiries_total", "Sessions closed 4401 because their token expired", total: core.tokenExpiries)
        if s.checksTokens { updateTokenRefusals(s) }
        updateKeySets(s.keySets)
        series.counter("rollcall_requests_total", "Requests received", total: core.requests)
        series.counter("rollcall_api_requests_total", "Server API requests handed to the core (key accepted)", total: core.apiRequests)
        series.counter("rollcall_frames_in_total", "Complete text messages received", total: t.framesIn)
        series.counter("rollcall_bytes_in_total", "Bytes of text messages received", total: t.bytesIn)
        series.counter("rollcall_frames_out_total", "WebSocket frames written (batched)", total: t.framesOut)
        series.counter("rollcall_objects_out_total", "JSON objects written (replies and events)", total: t.objectsOut)
        series.counter("rollcall_bytes_out_total", "Payload bytes written", total: t.bytesOut)
        series.counter("rollcall_writes_coalesced_total",
                       "Events held for the loop's coalescing flush (their connection was written less than a window ago)",
                       total: t.writesCoalesced)
        series.counter("rollcall_direct_writes_total",
                       "Queues written at once after the event that filled them, without a writable callback",
                       total: t.directWrites)
        series.gauge("rollcall_batched_sends_enabled",
                     "1 while a broadcast's frames go out in one io_uring submission (http.batchedSends), else 0",
                     t.batchedSendsEnabled ? 1 : 0)
        series.counter("rollcall_batched_sends_total", "Frames sent through the io_uring batch", total: t.batchedSends)
        series.counter("rollcall_batched_send_tails_total",
                       "Frames of the batch the socket took only in part (the rest went through libwebsockets)",
                       total: t.batchedSendTails)
        series.counter("rollcall_batched_send_failures_total",
                       "Times the io_uring batch failed and was turned off (then one lws_write per frame)",
                       total: t.batchedSendFailures)
        series.gauge("rollcall_last_frame_written_timestamp_seconds",
                     "When the last WebSocket frame was handed to a socket (Unix seconds, to the millisecond; 0: never)", [],
                     Double(t.lastFrameWrittenAt) / 1000)
        for code in ErrorCode.allCases {
            series.counter("rollcall_errors_total", "Error replies, by code", [("code", code.rawValue)],
                           total: core.errors[code] ?? 0)
        }
        series.counter("rollcall_slow_consumer_cuts_total",
                       "Connections cut with 1013 (outbound queue over limits.maxOutboundBytes)", total: t.slowConsumerCuts)
        series.counter("rollcall_heartbeat_timeouts_total",
                       "Connections dropped after heartbeat.timeoutSeconds of silence", total: t.heartbeatTimeouts)
        for code in [CloseCode.binaryFrame, .invalidUTF8, .frameTooBig] {
            series.counter("rollcall_protocol_closes_total", "Closes for a protocol fault, by close code",
                           [("code", String(code.rawValue))], total: t.protocolCloses[code.rawValue] ?? 0)
        }
        for (kind, count) in core.sessionEnds {
            series.counter("rollcall_session_ends_total", "Session ends (and holds), by kind", [("kind", kind)], total: count)
        }
        for (kind, count) in t.connectionEnds {
            series.counter("rollcall_connection_ends_total", "WebSocket connections ended, as the transport saw it",
                           [("kind", kind)], total: count)
        }
        series.counter("rollcall_upgrades_rejected_total", "WebSocket upgrades refused (path, origin, shutting down)",
                       total: t.upgradesRejected)
        series.gauge("rollcall_connection_cap",
                     "Connections served at once; above it new ones get 503 (open-file limit minus a reserve)", s.connectionCap)
        series.gauge("rollcall_connection_descriptors",
                     "Descriptors the connections hold now (accepted sockets of any kind plus files being sent)", s.descriptorsInUse)
        series.counter("rollcall_connections_refused_total", "Connections refused by the connection cap (503, or closed at accept)",
                       total: t.connectionsRefused)
        series.counter("rollcall_connections_closed_at_accept_total", "Of those, closed as soon as accepted (the 503 band was full)",
                       total: t.connectionsClosedAtAccept)
        if let webhooks = s.webhooks { updateWebhooks(webhooks) }
        for (status, count) in t.httpResponses {
            series.counter("rollcall_http_responses_total", "HTTP responses, by status", [("status", String(status))], total: count)
        }
    }
}
