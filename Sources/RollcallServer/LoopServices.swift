import RollcallRedisEngine

/// What runs on the service loop beside the connections, each optional: the cluster link to
/// Redis, the webhook sender and the key sets of jwt mode. The core's actions reach them
/// (`BrokerServer+Actions.swift`); they feed events back.
struct LoopServices {
    /// Cluster mode: the link to Redis on this thread's loop (nil on one node).
    var clusterLink: ClusterLink?
    /// Posts webhook batches (PROTOCOL §11); nil while `webhooks.url` is null.
    var webhookSender: WebhookSender?
    /// Shutdown: the moment (monotonic ms) waiting webhook batches stop being waited for.
    var webhookDrainDeadline: Int64?
    /// *(1.2)* `auth.jwksFile` and `auth.jwksUrl` (jwt mode): nil when neither is set.
    var keySets: KeySetService?
    /// Where `webhooks.secretEnv` is read.
    let environment: [String: String]

    init(environment: [String: String]) {
        self.environment = environment
    }

    /// True once shutdown need not wait for webhooks any more: nothing waits, or the
    /// webhook grace period is over (always true while not shutting down without a sender).
    func webhooksSettled(now: Int64) -> Bool {
        guard let webhookSender, !webhookSender.isIdle else { return true }
        guard let deadline = webhookDrainDeadline else { return true }
        return now >= deadline
    }
}
