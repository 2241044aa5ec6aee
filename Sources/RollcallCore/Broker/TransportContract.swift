import RollcallProtocol

/// The transport's handle for one WebSocket connection. Assigned by the transport, never reused.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The raw number.
    public let rawValue: UInt64
    /// Wraps a raw number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "c\(rawValue)" }
}

/// Why a connection ended, as the transport saw it (PROTOCOL §5).
public enum ConnectionEnd: Sendable, Equatable {
    /// The client sent a close frame, or the broker closed it for a protocol fault
    /// (1003, 1007, 1009): presence leaves at once.
    case closeFrame
    /// No close frame: the session is held for its presence timeout and may be resumed.
    case abnormal(AbnormalCause)
}

/// The ways a connection can end without a close frame.
public enum AbnormalCause: String, Sendable, Equatable {
    /// TCP reset or EOF without a close frame.
    case dropped
    /// Nothing received for `heartbeat.timeoutSeconds`.
    case heartbeatTimeout
    /// The outbound queue exceeded `limits.maxOutboundBytes` (closed with 1013).
    case slowConsumer
}

/// What the transport tells the core.
public enum InboundEvent: Sendable {
    /// A WebSocket connection was established.
    case opened(ConnectionID)
    /// One complete, UTF-8 valid text message (fragments already reassembled).
    case received(ConnectionID, [UInt8])
    /// The connection is gone. Ignored for connections the core already closed.
    case ended(ConnectionID, ConnectionEnd)
    /// Time has passed; run what is due (see ``Broker/nextDeadline``).
    case tick
    /// SIGTERM/SIGINT: end every session (`offline`), then the transport closes with 1001.
    case shutdown
    /// Cluster mode: the replies to the commands of ``Action/store(_:_:_:)`` (one per command,
    /// in order), or why none came.
    case storeReplied(StoreTicket, Result<[StoreReply], StoreFailure>)
    /// Cluster mode: a message on a pub/sub channel the core asked to hear (``Action/listen(_:)``).
    case storeMessage(channel: [UInt8], payload: [UInt8])
    /// Cluster mode: the pub/sub link came back after a loss and every channel is heard again;
    /// events published meanwhile may be missing.
    case storeResubscribed
    /// Cluster mode: Redis confirmed the subscription of these pub/sub channels (of
    /// ``Action/listen(_:)``): every message published to them from here on arrives. A first
    /// join of a channel on this node waits for it, so that no event after the join's
    /// snapshot is missed (docs/cluster.md, "Hearing a channel before joining it").
    case storeListening([[UInt8]])
    /// Cluster mode: a heartbeat of this node found it live (``StoreBeat``).
    case storeBeat(StoreBeat)
    /// Cluster mode: Redis lost the cluster's data (restarted empty): every session closes
    /// with 1012, without events about the lost members (PROTOCOL §9).
    case storeLost
    /// Cluster mode: the other nodes declared this node dead while it was cut off; its
    /// sessions are held in Redis with no node, so every connection here closes with 1001 and
    /// its client resumes (on any node).
    case storeFenced
    /// A server API request (PROTOCOL §10), `POST /api/v1/<op>` with its JSON body, whose
    /// key the transport already checked. The core answers with ``Action/respond(_:status:body:)``
    /// for the same id, in this or a later `handle` call; the transport keeps the exchange
    /// open until then.
    case api(APIRequestID, op: String, body: [UInt8])
    /// *(1.2)* A JWK Set was read (`auth.jwksFile`) or fetched (`auth.jwksUrl`): later logins
    /// and refreshes are verified with its keys in place of that source's earlier ones.
    /// Sessions already logged in are not checked again (PROTOCOL §3).
    case keySet(JWKSetSource, JWKSet)
}

/// What an object the core sends is to its client (``Action/send(_:_:_:)``).
public enum SendKind: Sendable, Equatable {
    /// The reply to one of the client's requests (`{"id":…,"ok":…}`, PROTOCOL §2): the client
    /// waits for it, so the transport writes it without holding it for the coalescing window.
    case reply
    /// An event (`{"event":…}`) or a frame that follows a reply (a snapshot).
    case event
}

/// What the core asks the transport to do, in order.
public enum Action: Sendable, Equatable {
    /// Queue these bytes (one compact JSON object) for the connection. The same array is
    /// shared by every recipient of an event: it is encoded once. The kind says whether the
    /// client waits for it (a reply) or not (an event), so the transport need not read it.
    case send(ConnectionID, [UInt8], SendKind)
    /// Flush what is queued, then close with this code. The core has already ended the
    /// session; the transport's later `.ended` for it is ignored.
    case close(ConnectionID, CloseCode, reason: String)
    /// Cluster mode: run these commands on the store in order and feed the replies back as
    /// ``InboundEvent/storeReplied(_:_:)`` with the same ticket; a busy link sends the
    /// waiting requests before the waiting upkeep (``StoreCallPriority``).
    case store(StoreTicket, [StoreCommand], StoreCallPriority)
    /// Cluster mode: start hearing a pub/sub channel (``InboundEvent/storeMessage(channel:payload:)``).
    case listen([UInt8])
    /// Cluster mode: stop hearing a pub/sub channel.
    case unlisten([UInt8])
    /// Hand this event to the webhook sender (PROTOCOL §11). Emitted only when
    /// `webhooks.url` is set and the event's kind is in `webhooks.events`, in the order the
    /// events happened.
    case notifyBackend(BackendEvent)
    /// Answer the server API request `id` with an HTTP `status` and this JSON body
    /// (`{"ok":true,"result":…}` or `{"ok":false,"error":…}`). The transport drops it when
    /// the client hung up meanwhile.
    case respond(APIRequestID, status: Int, body: [UInt8])
}

/// Cluster mode: what a heartbeat of this node saw when it found the node live (PROTOCOL §9).
/// With more than one key group the scripts of a user's slot cannot read the live nodes
/// (another slot), so a start and a claim pass this in (docs/cluster.md, "Liveness in the
/// user's slot").
public struct StoreBeat: Sendable, Equatable {
    /// Redis' time of the beat (ms): the node was live then.
    public let liveAt: Int64
    /// How long before the beat each live node had last beaten (ms), by node id.
    public let beatAges: [String: Int64]

    /// A beat at `liveAt` that saw the live nodes' `beatAges`.
    public init(liveAt: Int64, beatAges: [String: Int64]) {
        self.liveAt = liveAt
        self.beatAges = beatAges
    }
}
