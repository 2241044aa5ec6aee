import RollcallProtocol

/// Why a Redis operation failed. ``CodedError/code`` is stable; ``CodedError/message`` is for
/// people (for ``RedisErrorCode/errorReply``: Redis' error line, e.g. `NOSCRIPT ...`); for
/// ``RedisErrorCode/unavailable``, ``CodedError/retryAfterMs`` is the time until the next
/// reconnect attempt, the hint for an `UNAVAILABLE` answer's `retryAfterMs`.
public typealias RedisError = CodedError<RedisErrorCode>

/// The stable codes of a ``RedisError``.
public enum RedisErrorCode: String, StableErrorCode {
    /// `cluster.redis` is not a `redis[s]://`, `redis[s]+sentinel://` or `redis[s]+cluster://` URL (``RedisTarget``).
    case invalidEndpoint = "REDIS_INVALID_ENDPOINT"
    /// A ``RedisConnection`` (or a ``RedisSubscriber`` through it) was given a
    /// ``RedisTarget/cluster(_:)`` target: a Redis Cluster is spoken by ``RedisClusterClient``,
    /// one connection per master.
    case unsupportedEndpoint = "REDIS_UNSUPPORTED_ENDPOINT"
    /// A host name did not resolve (or not within the timeout). Retried at the next reconnect.
    case unresolved = "REDIS_UNRESOLVED"
    /// No sentinel named the master (each was unreachable, did not answer in time, or does
    /// not know the master's name). Asked again after a backoff.
    case masterNotFound = "REDIS_MASTER_NOT_FOUND"
    /// The address the sentinels named does not answer as master (`ROLE`), or answered
    /// `READONLY`: it was demoted. The sentinels are asked again after a backoff.
    case notMaster = "REDIS_NOT_MASTER"
    /// The connection is down (or not yet up): nothing was sent. Retry after ``RedisError/retryAfterMs``.
    case unavailable = "REDIS_UNAVAILABLE"
    /// Redis did not answer within the configured timeout; the connection was reset.
    case timeout = "REDIS_TIMEOUT"
    /// The TCP connection could not be made.
    case connectFailed = "REDIS_CONNECT_FAILED"
    /// The connection was lost (closed by Redis, reset, killed) with the command in flight.
    case connectionLost = "REDIS_CONNECTION_LOST"
    /// `cluster.tls` cannot be used: a file that cannot be read, a key that does not match its
    /// certificate, `certFile` without `keyFile` (the message names the key). At start only.
    case invalidTLS = "REDIS_TLS_INVALID"
    /// The server's certificate did not verify against `cluster.tls.caFile` (or the system's
    /// store), or does not name the server. The link is refused and retried after a backoff.
    case tlsVerifyFailed = "REDIS_TLS_VERIFY_FAILED"
    /// The TLS handshake failed for another reason (no common protocol, the server refused the
    /// client certificate, not a TLS port). Retried after a backoff.
    case tlsHandshakeFailed = "REDIS_TLS_HANDSHAKE_FAILED"
    /// Redis refused `AUTH` or `SELECT` at connect.
    case handshakeRefused = "REDIS_HANDSHAKE_REFUSED"
    /// Redis answered the command with an error reply (e.g. `NOSCRIPT`, `WRONGTYPE`).
    case errorReply = "REDIS_ERROR_REPLY"
    /// The subscriber's probe showed that its subscriptions are gone.
    case subscriptionLost = "REDIS_SUBSCRIPTION_LOST"
    /// Redis sent something this client did not expect.
    case protocolViolation = "REDIS_PROTOCOL_VIOLATION"
    /// The connection was closed by its owner (`close()`).
    case closed = "REDIS_CLOSED"
    /// Redis Cluster: the keys of one command hash to different slots (``RedisClusterClient``
    /// refuses it before sending; put them under one `{hash tag}`).
    case crossSlot = "REDIS_CROSS_SLOT"
    /// Redis Cluster: a command was given no key to route it by.
    case noKey = "REDIS_NO_KEY"
}

extension RedisError {
    /// The error prefixes with which Redis says "not now" rather than "no" (PROTOCOL §9, "Which
    /// Redis"): out of memory, a script or module running too long, loading its data, a replica
    /// that does not take writes, a master with no reachable master or replicas, a slot moving,
    /// a cluster that is down, and (beyond PROTOCOL's list, session 45) a master refusing writes
    /// for want of replicas that keep up (`min-replicas-to-write`: `NOREPLICAS`, also when a
    /// script's write met it). A request that met one is answered `UNAVAILABLE`, never `INTERNAL`.
    public static let notNowPrefixes = ["OOM", "BUSY", "LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS"]

    /// True for an error reply whose first word is one of ``notNowPrefixes``.
    public var isNotNow: Bool {
        guard code == .errorReply else { return false }
        let word = message.prefix { $0 != " " }
        return Self.notNowPrefixes.contains { $0 == word }
    }
}
