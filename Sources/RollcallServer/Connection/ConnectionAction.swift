import RollcallCore

/// One thing the lws glue does for a connection, as asked by its ``ConnectionLifecycle``.
enum ConnectionAction: Equatable, Sendable {
    /// Ask lws for a writable callback (`lws_callback_on_writable`).
    case requestWritable
    /// Arm lws' per-connection backstop: it frees the connection after `seconds`
    /// (`lws_set_timeout(…, PENDING_TIMEOUT_USER_OK, seconds)`), replacing any earlier one.
    case setTimeout(seconds: Int32)
    /// Have lws free the connection at its next service turn, without a close frame
    /// (`LWS_TO_KILL_ASYNC`); for use outside the connection's own callback.
    case killNow
    /// Return -1 from the connection's current lws callback: lws closes it now.
    case hangUp
    /// Drop the outbound queue and any partially received message.
    case discardBuffers
    /// Write a heartbeat ping (from the writable callback).
    case writePing
    /// Write our close frame (from the writable callback), then report how it went with
    /// ``ConnectionLifecycle/closeFrameWritten(pipeChoked:)``.
    case writeCloseFrame(code: UInt16, reason: String)
    /// Our close frame left lws: half-close the socket (`SHUT_WR`) and keep reading and
    /// discarding until the peer closes or the linger timeout fires.
    case halfCloseAndLinger
    /// Tell the core the connection is over (`InboundEvent.ended`).
    case reportEnded(ConnectionEnd)
    /// (Re-)arm the connection's heartbeat check at this monotonic millisecond.
    case scheduleHeartbeatCheck(at: Int64)
}

/// The actions one input produced, in order: at most four, stored inline so that taking
/// them allocates nothing (the writable and heartbeat paths run for every connection).
struct ConnectionActions: RandomAccessCollection, Equatable, Sendable {
    private var first, second, third, fourth: ConnectionAction?
    /// How many actions there are.
    let endIndex: Int

    /// Up to four actions, in the order given.
    init(_ first: ConnectionAction? = nil, _ second: ConnectionAction? = nil,
         _ third: ConnectionAction? = nil, _ fourth: ConnectionAction? = nil) {
        self.first = first
        self.second = second
        self.third = third
        self.fourth = fourth
        endIndex = fourth != nil ? 4 : third != nil ? 3 : second != nil ? 2 : first != nil ? 1 : 0
    }

    /// No action.
    static let none = ConnectionActions()

    var startIndex: Int { 0 }

    subscript(position: Int) -> ConnectionAction {
        switch position {
        case 0: first!
        case 1: second!
        case 2: third!
        default: fourth!
        }
    }
}
