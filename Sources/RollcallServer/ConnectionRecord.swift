import CRollcallShim
import RollcallCore

/// The transport's state for one WebSocket connection. Lives on the service thread only.
///
/// lws keeps just the key (``rollcall_pss_t``) in its per-connection space; everything else
/// is here. An idle connection costs this object plus empty collections (no buffers).
final class ConnectionRecord {
    /// The core's handle.
    let id: ConnectionID
    /// The lws connection.
    let wsi: OpaquePointer
    /// What the core asked to send and the socket has not taken yet.
    var outbound = OutboundQueue()
    /// Fragments of the message being reassembled (empty between messages).
    var partialMessage: [UInt8] = []
    /// The peer sent a close frame (`LWS_CALLBACK_WS_PEER_INITIATED_CLOSE`).
    var peerSentClose = false
    /// The core already knows this connection is over (it closed it, or the transport
    /// reported `.ended`): `LWS_CALLBACK_CLOSED` must not report it again.
    var endReported = false
    /// A close to send once the queue is flushed (core `.close`, or 1013 for a slow consumer).
    var pendingClose: (code: UInt16, reason: String)?
    /// Our close frame went to lws (`lws_write(…, LWS_WRITE_CLOSE)`); nothing else is written.
    var closeFrameSent = false
    /// The close frame was handed to the kernel and the socket half-closed (`SHUT_WR`):
    /// whatever still arrives is read and discarded until the peer's EOF or close frame, or
    /// the linger timeout (a lingering close, so unread input never turns into a reset that
    /// destroys the close frame on its way to the peer).
    var lingering = false
    /// A heartbeat ping waits for the next writable callback.
    var pingDue = false
    /// Monotonic milliseconds of the last frame or pong received.
    var lastHeard: Int64
    /// Monotonic milliseconds of the last ping sent (or of the opening).
    var lastPing: Int64

    init(id: ConnectionID, wsi: OpaquePointer, now: Int64) {
        self.id = id
        self.wsi = wsi
        self.lastHeard = now
        self.lastPing = now
    }

    /// How the connection is ending, once the transport or the core decided to end it.
    var endKind: ConnectionEndKind?

    /// True once the transport or the core has decided to end this connection: nothing more
    /// is queued or read.
    var isClosing: Bool { endKind != nil }
}
