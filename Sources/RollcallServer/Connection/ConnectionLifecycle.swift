import RollcallCore
import RollcallProtocol

/// The life of one WebSocket connection as a value: where it is between open and closed,
/// how it ends, and its heartbeat. Each input (an lws callback, a core action, a timer
/// check at a monotonic `now`) moves it and returns the ``ConnectionActions`` the lws glue
/// carries out; it does no I/O and reads no clock, so it is tested without sockets.
///
/// - `open` → `peerClosing`: the peer's close frame (lws answers it).
/// - `open` → `flushing`: a core close, shutdown, a protocol fault or a slow-consumer cut.
/// - `flushing` → `closeFrameSent`: the queue is flushed and the pipe clear; our frame is written.
/// - `flushing` → `peerClosing`: the peer's close frame came before ours went.
/// - `closeFrameSent` → `lingering`: our frame left lws; the socket is half-closed.
/// - `open` → `killed`: heartbeat silence, or a write outside the writable callback failed.
/// - any → `closed`: lws `CLOSED` (EOF, reset, our hang-up, the linger or backstop timeout).
///
/// The core hears about the end exactly once: at once for a protocol fault (`.closeFrame`),
/// a slow-consumer cut (`.abnormal(.slowConsumer)`) and a heartbeat drop
/// (`.abnormal(.heartbeatTimeout)`); never for a close the core asked for itself (it knows);
/// otherwise at lws `CLOSED` (`.closeFrame` after the peer's close frame, else
/// `.abnormal(.dropped)`). See `docs/transport.md`.
struct ConnectionLifecycle: Equatable, Sendable {
    /// Where the connection is.
    enum State: Equatable, Sendable {
        /// Serving: input is read, output queued. `pingDue`: a heartbeat ping waits for the
        /// next writable callback.
        case open(pingDue: Bool)
        /// The peer sent a close frame while we had not sent ours; lws answers it and closes.
        /// Nothing more is read or written.
        case peerClosing
        /// Closing: what was queued before the decision drains, then this close frame goes.
        case flushing(CloseFrame)
        /// Our close frame is with lws, which still holds part of it.
        case closeFrameSent
        /// Our close frame is in the kernel and the socket half-closed: input is read and
        /// discarded until the peer closes, its EOF, or the linger timeout.
        case lingering
        /// Dropped without a close frame (heartbeat silence); lws frees it next turn.
        case killed
        /// lws closed the connection (`LWS_CALLBACK_CLOSED`).
        case closed
    }

    /// A close frame to send: the code and at most 123 bytes of reason (cut when written).
    struct CloseFrame: Equatable, Sendable {
        // The reason first: 18 bytes, not 24 (the state enum, and so every connection record, is smaller).
        let reason: String
        let code: UInt16

        init(code: UInt16, reason: String) {
            self.reason = reason
            self.code = code
        }
    }

    /// How long lws gives a connection the broker is closing to take its close frame. A cut
    /// slow consumer has to drain its socket buffers first; its queue is already dropped, so
    /// the wait costs little, and 10 s lets a client that resumes reading late still see 1013.
    static let closeGraceSeconds: Int32 = 10
    /// How long a connection lingers after our close frame (half-closed, reading and
    /// discarding) for the peer to close its side, before lws frees it anyway.
    static let lingerSeconds: Int32 = 2

    // Ordered so that no padding falls between fields (36 bytes; 48 the other way round).
    /// Monotonic milliseconds of the last frame or pong received (or of the opening).
    private(set) var lastHeard: Int64
    /// Monotonic milliseconds of the last ping scheduled (or of the opening).
    private(set) var lastPing: Int64
    /// Where the connection is now.
    private(set) var state: State = .open(pingDue: false)
    /// How the connection ends, once the transport or the core decided it (or lws closed
    /// it). Once set, the core knows: the end is never reported again.
    private(set) var endKind: ConnectionEndKind?

    /// A connection established at `now` (monotonic milliseconds).
    init(openedAt now: Int64) {
        lastHeard = now
        lastPing = now
    }

    // MARK: - Queries

    /// True while complete messages go to the core (open only).
    var isReading: Bool {
        if case .open = state { return true }
        return false
    }

    /// True while the core's output is queued (open only); once the end is decided nothing
    /// new is queued.
    var acceptsOutput: Bool { isReading }

    /// True while a close frame waits for the queue to drain (the writer must then test
    /// the pipe after the last frame).
    var hasCloseToSend: Bool {
        if case .flushing = state { return true }
        return false
    }

    /// When the heartbeat must look at this connection next: the next ping or the silence
    /// deadline, whichever is first.
    func nextHeartbeatCheck(_ policy: HeartbeatPolicy) -> Int64 {
        min(lastPing + policy.intervalMs, lastHeard + policy.timeoutMs)
    }

    // MARK: - Inputs from the peer

    /// A frame (or a piece of one) or a pong arrived at `now`: the peer is alive. Counted in
    /// every state (a lingering peer is still heard), so it costs one store.
    mutating func heard(at now: Int64) {
        lastHeard = now
    }

    /// `LWS_CALLBACK_WS_PEER_INITIATED_CLOSE`. Open or flushing: lws answers the close frame
    /// and closes (the end is reported at `CLOSED` if the core does not know yet). Lingering:
    /// this is the answer to our close frame, so hang up now.
    mutating func peerSentClose() -> ConnectionActions {
        switch state {
        case .open, .flushing:
            state = .peerClosing
            return .none
        case .lingering:
            return ConnectionActions(.hangUp)
        case .peerClosing, .closeFrameSent, .killed, .closed:
            return .none
        }
    }

    /// A binary frame (1003), invalid UTF-8 (1007) or an oversized message (1009): the session
    /// ends at once as if the client had sent a close frame (PROTOCOL §5), nothing more is
    /// read or buffered, and the close frame goes out like any broker close.
    mutating func protocolFault(_ code: CloseCode, reason: String) -> ConnectionActions {
        guard isReading else { return .none }
        state = .flushing(CloseFrame(code: code.rawValue, reason: reason))
        endKind = .protocolFault
        return ConnectionActions(
            .discardBuffers, .setTimeout(seconds: Self.closeGraceSeconds), .requestWritable, .reportEnded(.closeFrame))
    }

    // MARK: - Inputs from the core and the broker

    /// The core's `.close(code, reason)`: flush what is queued, then close. The core already
    /// ended the session, so the end is not reported to it. 1001 counts as a shutdown.
    mutating func coreClosed(_ code: CloseCode, reason: String) -> ConnectionActions {
        beginClosing(code.rawValue, reason: reason, kind: code == .shutdown ? .shutdown : .brokerClose)
    }

    /// Broker shutdown for a connection the core did not close itself: close 1001.
    mutating func shutdown() -> ConnectionActions {
        beginClosing(CloseCode.shutdown.rawValue, reason: "shutdown", kind: .shutdown)
    }

    /// The outbound queue went over `limits.maxOutboundBytes`: drop it, tell the core the
    /// connection ended abnormally (its session is held), and try to send 1013.
    mutating func slowConsumerCut() -> ConnectionActions {
        guard isReading else { return .none }
        state = .flushing(CloseFrame(code: CloseCode.slowConsumer.rawValue, reason: "slow consumer"))
        endKind = .slowConsumer
        return ConnectionActions(
            .discardBuffers, .setTimeout(seconds: Self.closeGraceSeconds), .requestWritable,
            .reportEnded(.abnormal(.slowConsumer)))
    }

    private mutating func beginClosing(_ code: UInt16, reason: String, kind: ConnectionEndKind) -> ConnectionActions {
        switch state {
        case .open:
            state = .flushing(CloseFrame(code: code, reason: reason))
            endKind = kind
            return ConnectionActions(.setTimeout(seconds: Self.closeGraceSeconds), .requestWritable)
        case .peerClosing where endKind == nil:
            // lws is already answering the peer's close frame: nothing to send, but the core
            // now knows, so `CLOSED` reports nothing.
            endKind = kind
            return .none
        case .peerClosing, .flushing, .closeFrameSent, .lingering, .killed, .closed:
            return .none
        }
    }

    // MARK: - Writing

    /// `LWS_CALLBACK_SERVER_WRITEABLE`, before the queue is written: a due ping, or, once our
    /// close frame has left lws, the lingering close. The glue then writes the queue and
    /// calls ``queueFlushed(pipeChoked:)``.
    mutating func writable() -> ConnectionActions {
        switch state {
        case .open(pingDue: true):
            state = .open(pingDue: false)
            return ConnectionActions(.writePing)
        case .closeFrameSent:
            return beginLingering()
        case .open(pingDue: false), .peerClosing, .flushing, .lingering, .killed, .closed:
            return .none
        }
    }

    /// The outbound queue is empty. Closing: the close frame goes once the pipe is clear
    /// (`pipeChoked` is only evaluated then: it costs a system call).
    mutating func queueFlushed(pipeChoked: @autoclosure () -> Bool) -> ConnectionActions {
        guard case .flushing(let frame) = state else { return .none }
        if pipeChoked() { return ConnectionActions(.requestWritable) }
        state = .closeFrameSent
        return ConnectionActions(.writeCloseFrame(code: frame.code, reason: frame.reason))
    }

    /// Our close frame was written. If lws kept part of it, wait for the writable callback it
    /// raises once flushed; else half-close and linger now.
    mutating func closeFrameWritten(pipeChoked: Bool) -> ConnectionActions {
        guard state == .closeFrameSent else { return .none }
        return pipeChoked ? ConnectionActions(.requestWritable) : beginLingering()
    }

    /// A write outside lws' writable callback failed (lws marked the socket unusable; it
    /// cannot be told -1 from there). Open: dropped like a heartbeat kill, nothing more is
    /// read or written and lws frees it on its next turn; the end is reported at `CLOSED` as
    /// `.abnormal(.dropped)`, as when a write fails inside the callback.
    mutating func writeFailed() -> ConnectionActions {
        guard isReading else { return .none }
        state = .killed
        return ConnectionActions(.discardBuffers, .killNow)
    }

    private mutating func beginLingering() -> ConnectionActions {
        state = .lingering
        return ConnectionActions(.halfCloseAndLinger, .setTimeout(seconds: Self.lingerSeconds))
    }

    // MARK: - Time

    /// The heartbeat check fell due at `now`. Open: silent for `policy.timeoutMs` → dropped
    /// without a close frame, reported as `.abnormal(.heartbeatTimeout)`; else a ping is due
    /// when `policy.intervalMs` passed since the last one; the next check is scheduled.
    /// Closing connections are not checked again (lws' timeouts bound them).
    mutating func heartbeatCheck(at now: Int64, policy: HeartbeatPolicy) -> ConnectionActions {
        guard isReading else { return .none }
        if now - lastHeard >= policy.timeoutMs {
            state = .killed
            endKind = .heartbeatTimeout
            return ConnectionActions(.discardBuffers, .killNow, .reportEnded(.abnormal(.heartbeatTimeout)))
        }
        guard now - lastPing >= policy.intervalMs else {
            return ConnectionActions(.scheduleHeartbeatCheck(at: nextHeartbeatCheck(policy)))
        }
        lastPing = now
        state = .open(pingDue: true)
        return ConnectionActions(.requestWritable, .scheduleHeartbeatCheck(at: nextHeartbeatCheck(policy)))
    }

    // MARK: - The end

    /// `LWS_CALLBACK_CLOSED` (the peer's EOF or reset, our hang-up, or an lws timeout such as
    /// the linger or close backstop). Reports the end unless the core already knows.
    mutating func socketClosed() -> ConnectionActions {
        let peerClosed = state == .peerClosing
        state = .closed
        guard endKind == nil else { return .none }
        endKind = peerClosed ? .closeFrame : .dropped
        return ConnectionActions(.reportEnded(peerClosed ? .closeFrame : .abnormal(.dropped)))
    }
}
