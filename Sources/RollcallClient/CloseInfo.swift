import RollcallProtocol

/// How a connection ended.
public struct CloseInfo: Sendable, Equatable, CustomStringConvertible {
    /// The close code from the server's close frame, or the code this client sent when it
    /// closed first; nil when no close frame was exchanged (a drop).
    ///
    /// libwebsockets 4.1.6 rewrites close codes it considers reserved (among them the
    /// broker's 1013) to 1002 before reporting them; ``reason`` is kept as sent.
    public var code: UInt16?
    /// The close reason text that accompanied ``code``.
    public var reason: String
    /// True when the server sent the first close frame.
    public var closedByServer: Bool
    /// True when the connection ended without a close frame from the server
    /// (TCP drop, reset, our own ``RollcallConnection/drop()``).
    public var dropped: Bool

    /// Creates a close description.
    public init(code: UInt16?, reason: String, closedByServer: Bool, dropped: Bool) {
        self.code = code
        self.reason = reason
        self.closedByServer = closedByServer
        self.dropped = dropped
    }

    /// The cluster lost its data (Redis restarted empty, PROTOCOL §9): the broker closed every
    /// session with 1012 so that clients log in again, and no resume token resumes. lws 4.1.6
    /// reports 1012 to the client as 1002 and keeps the broker's reason.
    public var isClusterDataLost: Bool {
        code == CloseCode.serviceRestart.rawValue || (code == 1002 && reason == CloseCode.clusterDataLostReason)
    }

    public var description: String {
        var text = code.map { "code \($0)" } ?? "no close code"
        if !reason.isEmpty { text += " \"\(reason)\"" }
        if closedByServer { text += ", by server" }
        if dropped { text += ", dropped" }
        return text
    }
}
