/// Counters the transport keeps for `/metrics` (the core keeps its own, ``BrokerMetrics``).
struct TransportMetrics {
    /// WebSocket connections ever established.
    var connectionsTotal = 0
    /// Complete text messages received.
    var framesIn = 0
    /// Bytes of complete text messages received.
    var bytesIn = 0
    /// WebSocket frames written (one frame may batch several objects).
    var framesOut = 0
    /// Payload bytes written.
    var bytesOut = 0
    /// JSON objects written.
    var objectsOut = 0
    /// Events held for the coalescing flush instead of a writable request at once.
    var writesCoalesced = 0
    /// Queues written at once, outside lws' writable callback (no writable request).
    var directWrites = 0
    /// Whether broadcasts' frames go out through the io_uring batch (``BatchedSends``).
    var batchedSendsEnabled = false
    /// Frames sent through the io_uring batch.
    var batchedSends = 0
    /// Of those, frames the socket took only in part, the rest handed to lws.
    var batchedSendTails = 0
    /// Times the io_uring batch failed and was turned off.
    var batchedSendFailures = 0
    /// When the last frame was handed to the socket (Unix milliseconds; 0: never).
    var lastFrameWrittenAt: Int64 = 0
    /// Connections cut because their outbound queue exceeded `limits.maxOutboundBytes`.
    var slowConsumerCuts = 0
    /// Connections dropped for heartbeat silence.
    var heartbeatTimeouts = 0
    /// Closes the transport started for a protocol fault, by close code.
    var protocolCloses: [UInt16: Int] = [:]
    /// Connections that ended, by how the transport saw it.
    var connectionEnds: [String: Int] = [:]
    /// HTTP requests answered, by status.
    var httpResponses: [Int: Int] = [:]
    /// Upgrades refused (bad path, origin, or shutting down).
    var upgradesRejected = 0
    /// Connections refused by the connection cap (503, or closed at accept).
    var connectionsRefused = 0
    /// Of those, closed at accept without a response (the 503 band was full).
    var connectionsClosedAtAccept = 0
}
