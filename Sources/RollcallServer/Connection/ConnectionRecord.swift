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
    /// The message being reassembled from lws' chunks (empty between messages).
    var assembler = MessageAssembler()
    /// When the last frame was written (the event loop's time, seconds): a connection written
    /// less than a coalescing window ago is busy (``WriteCoalescer``).
    var lastFrameAt = -Double.infinity
    /// Where the connection is between open and closed, and its heartbeat. Near the end: it
    /// is 36 bytes ending in single bytes, so the record is 104 bytes (a 112-byte malloc
    /// chunk; 112 bytes, a 128-byte chunk, before the lifecycle and `CloseFrame` were packed).
    var lifecycle: ConnectionLifecycle
    /// The generation of this connection's latest heartbeat check (``ConnectionTable``): a
    /// queued check of another generation is stale. These four bytes fill the record's
    /// padding (100 bytes without them, 104 with).
    var heartbeatGeneration: UInt32 = 0

    init(id: ConnectionID, wsi: OpaquePointer, now: Int64) {
        self.id = id
        self.wsi = wsi
        self.lifecycle = ConnectionLifecycle(openedAt: now)
    }
}
