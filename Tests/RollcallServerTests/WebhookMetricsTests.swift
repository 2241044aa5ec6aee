@testable import RollcallServer
import Testing

/// The webhook series of `/metrics` (docs/webhooks.md): present while webhooks are on.
@Suite struct WebhookMetricsTests {
    private func render(_ snapshot: MetricsSnapshot) -> String {
        String(decoding: MetricsExposition().render(snapshot), as: UTF8.self)
    }

    @Test func theSeriesAppearOnlyWhileWebhooksAreOn() {
        #expect(!render(MetricsSnapshot()).contains("rollcall_webhook"))
        var snapshot = MetricsSnapshot()
        var counters = WebhookCounters()
        counters.queued = 12
        counters.deliveredEvents = 7
        counters.deliveredBatches = 2
        counters.failedAttempts = 3
        counters.droppedOverflow = 4
        counters.droppedRetriesExhausted = 1
        snapshot.webhooks = WebhookMetrics(counters: counters, waitingEvents: 5)
        let page = render(snapshot)
        for line in [
            "rollcall_webhook_events_queued_total 12", "rollcall_webhook_events_delivered_total 7",
            "rollcall_webhook_batches_delivered_total 2", "rollcall_webhook_attempts_failed_total 3",
            #"rollcall_webhook_events_dropped_total{reason="overflow"} 4"#,
            #"rollcall_webhook_events_dropped_total{reason="retriesExhausted"} 1"#,
        ] {
            #expect(page.contains(line + "\n"), "missing \(line)")
        }
        #expect(page.contains("rollcall_webhook_queue_events 5"))
    }
}
