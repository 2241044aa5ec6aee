import RollcallCore
import RollcallProtocol

/// Every value `/metrics` reads off the broker at one moment, gathered on the service thread.
/// A plain value so the exposition can be tested without a server.
struct MetricsSnapshot {
    /// True while the broker accepts connections.
    var accepting = true
    /// WebSocket connections open now.
    var connections = 0
    /// The transport's running totals.
    var transport = TransportMetrics()
    /// The core's running totals (``BrokerMetrics``).
    var logins = 0
    var resumes = 0
    var tokenRefreshes = 0
    var tokenExpiries = 0
    var clusterEndsFinished = 0
    var clusterStepsRetried = 0
    var clusterCatchUpsLost = 0
    var clusterRepeatedMessagesDropped = 0
    var clusterSessionsLostByNode = 0
    var clusterLostRecordsEnded = 0
    var clusterEventsRewritten = 0
    var requests = 0
    var apiRequests = 0
    var errors: [ErrorCode: Int] = [:]
    var sessionEnds: [String: Int] = [:]
    var liveSessions = 0
    var heldSessions = 0
    var users = 0
    var channels = 0
    var intervalFlushesPending = 0
    var subscriptions = 0
    /// How the durable store's writes are doing.
    var storage = StorageHealth.healthy
    /// The connection cap (``ConnectionCap``) and the descriptors the connections hold now.
    var connectionCap = 0
    var descriptorsInUse = 0
    /// Cluster mode: nodes seen alive (this one included), whether Redis is connected, and how
    /// often its link came back at another address (a failover); nil on one node.
    var cluster: (nodes: Int, redisConnected: Bool, redisAddressChanges: Int, dataLosses: Int)?
    /// The webhook sender's totals; nil while webhooks are off.
    var webhooks: WebhookMetrics?
    /// True when logins need a token (jwt mode): the refusal counters are shown then.
    var checksTokens = false
    /// Logins and refreshes refused for their token, by reason (1.2).
    var loginRefusals: [String: Int] = [:]
    var refreshRefusals: [String: Int] = [:]
    /// Each configured key set source (`auth.jwksFile`, `auth.jwksUrl`; 1.2).
    var keySets: [KeySetMetrics] = []
}

/// What `/metrics` shows about webhooks (PROTOCOL §11).
struct WebhookMetrics {
    var counters: WebhookCounters
    /// Events waiting in the queue now (not counting the batch in flight).
    var waitingEvents: Int
}

extension MetricsSnapshot {
    /// The values of `broker` and the transport now.
    init(broker: Broker, transport: TransportMetrics, connections: Int, accepting: Bool,
         connectionCap: Int, descriptorsInUse: Int) {
        self.accepting = accepting
        self.connections = connections
        self.transport = transport
        logins = broker.metrics.logins
        resumes = broker.metrics.resumes
        tokenRefreshes = broker.metrics.refreshes
        tokenExpiries = broker.metrics.tokenExpiries
        clusterEndsFinished = broker.metrics.clusterEndsFinished
        clusterStepsRetried = broker.metrics.clusterUserStepsUnanswered + broker.metrics.clusterRefencesUnanswered
        clusterCatchUpsLost = broker.metrics.clusterCatchUpsLost
        clusterRepeatedMessagesDropped = broker.metrics.clusterRepeatedMessagesDropped
        clusterSessionsLostByNode = broker.metrics.clusterSessionsLostByNode
        clusterLostRecordsEnded = broker.metrics.clusterLostRecordsEnded
        clusterEventsRewritten = broker.metrics.clusterEventsRewritten
        requests = broker.metrics.requests
        apiRequests = broker.metrics.apiRequests
        errors = broker.metrics.errors
        checksTokens = broker.authenticator.checksTokens
        loginRefusals = broker.metrics.loginRefusals
        refreshRefusals = broker.metrics.refreshRefusals
        sessionEnds = broker.metrics.sessionEnds
        liveSessions = broker.directory.liveCount
        heldSessions = broker.heldSessionCount
        users = broker.directory.userCount
        channels = broker.channelCount
        intervalFlushesPending = broker.pendingIntervalFlushes
        subscriptions = broker.subscriptionCount
        storage = broker.storageHealth
        self.connectionCap = connectionCap
        self.descriptorsInUse = descriptorsInUse
    }
}
