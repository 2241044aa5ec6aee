// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
/// One thing a connection has queued for its next `WRITEABLE` callback.
enum Outgoing {
    /// A complete text message (not checked for UTF-8: hostile tests send invalid bytes).
    case text([UInt8])
    /// A complete binary message.
    case binary([UInt8])
    /// One fragment of a fragmented message: `first` selects the text/binary opcode,
    /// later fragments are continuations; `fin` ends the message.
    case fragment([UInt8], binary: Bool, first: Bool, fin: Bool)
    /// A close frame with this code and reason, then the closing handshake.
    case close(UInt16, String)
    /// Shut the TCP stream down without a close frame.
    case drop
}
#endif
