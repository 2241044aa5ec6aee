import RollcallCore

/// What the server keeps to write WebSocket frames (the lws side is `BrokerServer+Writing.swift`,
/// `+Actions.swift` and `+BatchedSends.swift`): the one write buffer with lws' headroom, the
/// coalescer, the quiet connections due a direct write once the current actions are applied,
/// the io_uring batch, the connections that compress, the frame histograms and the limits.
/// Held inline by the server: reaching any of it costs no indirection per frame.
struct WebSocketOutput {
    let writer: WriteBuffer
    /// The slow-consumer rule and frame bound of this broker's limits.
    let policy: OutboundPolicy
    /// Frame sizes and queued bytes at write (the server's ``ServerHistograms``).
    let histograms: ServerHistograms
    /// Holds a busy connection's events for the loop's flush so they share a frame (nil on
    /// lws' poll loop: every event asks for a writable callback at once).
    var coalescer: WriteCoalescer?
    /// Quiet connections that got output during the current `feed`: written directly once the
    /// whole action list is applied (``BrokerServer/writeDirectly(_:)``).
    var directWrites: [ConnectionRecord] = []
    /// The first pass's written connections (`writeDirectWrites`), kept for its capacity.
    var sentAloneScratch: [ConnectionRecord] = []
    /// Sends a broadcast's frames to quiet connections in one io_uring submission (nil:
    /// `http.batchedSends` false, TLS, no io_uring here, or the ring failed; then one
    /// `lws_write` each).
    var batchedSends: BatchedSends?
    /// Connections that offered permessage-deflate while it is on: never written outside lws'
    /// writable callback (the extension drains its output from there). A set beside the
    /// records, not a flag in ``ConnectionRecord``: a flag would take the record from 104 to
    /// 105 bytes, a 128-byte malloc chunk instead of 112 (16 bytes per session), while the set
    /// costs one hash lookup per direct write, and only while some connection compresses.
    var compressingConnections = Set<ConnectionID>()

    init(limits: Configuration.Limits, histograms: ServerHistograms) {
        writer = WriteBuffer(initialCapacity: max(1024, limits.maxBatchBytes))
        policy = OutboundPolicy(maxOutboundBytes: limits.maxOutboundBytes, maxBatchBytes: limits.maxBatchBytes)
        self.histograms = histograms
    }

    /// True when `id` may be written outside the writable callback as far as compression goes.
    func isUncompressed(_ id: ConnectionID) -> Bool {
        compressingConnections.isEmpty || !compressingConnections.contains(id)
    }

    /// The coalescer's clock, or 0 without one (the busy stamp of a written connection).
    var now: Double { coalescer?.now ?? 0 }
}
