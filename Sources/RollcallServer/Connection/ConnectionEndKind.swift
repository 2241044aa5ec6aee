/// How a connection ended, as the transport saw it, for `/metrics`
/// (`rollcall_connection_ends_total{kind}`).
enum ConnectionEndKind: String, Sendable {
    /// The peer sent a close frame.
    case closeFrame = "close_frame"
    /// The socket went away without a close frame from either side.
    case dropped
    /// The transport closed it for a binary frame, bad UTF-8 or an oversized message.
    case protocolFault = "protocol_fault"
    /// The core closed it (logout, 4401, 4408, 4409, ...).
    case brokerClose = "broker_close"
    /// Its outbound queue went over `limits.maxOutboundBytes` (close 1013).
    case slowConsumer = "slow_consumer"
    /// Nothing was heard from it for `heartbeat.timeoutSeconds`.
    case heartbeatTimeout = "heartbeat_timeout"
    /// The broker is shutting down (close 1001).
    case shutdown
}
