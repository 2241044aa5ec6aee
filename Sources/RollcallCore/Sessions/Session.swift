import DequeModule

/// A logged-in session: one login, possibly carried by several connections in turn
/// (an abnormal drop holds it; a `resumeToken` login attaches a new connection).
public final class Session {
    // Stored fields are ordered so that little pads to 8 bytes, the optionals and single
    // bytes last: one instance per session, 196 bytes (a 208-byte malloc chunk) with the first
    // channel inline, where the old layout took 225 (240) plus a ~130-byte dictionary for it.
    /// Internal key, unique for the broker's lifetime.
    public let number: UInt64
    /// The public id given in the login result.
    public let sessionId: String
    /// The user it belongs to.
    public let userId: Name
    /// How long it is held after an abnormal drop.
    package var presenceTimeoutMs: Int64
    /// The single-use token that resumes it while held (stored as 128 bits, see ``ResumeToken``).
    var token: ResumeToken
    /// The token as sent to the client: 32 lowercase hex digits.
    public var resumeToken: String { token.text }
    /// `message` events that arrived while held, for the resume; nil until the first one. A
    /// reference (8 bytes) rather than the 24-byte value: few sessions ever hold messages.
    private var heldMessages: HeldMessageBox?
    /// Channel presence bookkeeping for this session.
    package var presence = SessionPresence()
    /// The live connection; nil while held.
    public internal(set) var connection: ConnectionID?
    /// When it was dropped abnormally; nil while live.
    var heldSince: Timestamp?
    /// What its token allows.
    package var grant = Grant.unlimited
    /// Device family.
    public let platform: Platform
    /// The `refreshRequired` notice went out for the current token.
    var refreshNoticeSent = false

    package init(number: UInt64, userId: Name, platform: Platform,
         connection: ConnectionID, presenceTimeoutMs: Int64, token: ResumeToken, idPrefix: String = "",
         sessionId: String? = nil) {
        self.number = number
        self.sessionId = sessionId ?? "\(idPrefix)s\(number)-\(token.text.prefix(6))"
        self.userId = userId
        self.platform = platform
        self.connection = connection
        self.presenceTimeoutMs = presenceTimeoutMs
        self.token = token
    }

    /// True while dropped and waiting to be resumed or timed out.
    package var isHeld: Bool { connection == nil }

    /// Keeps a `message` event for the resume, up to `limit` bytes (see ``HeldMessages``).
    func keepHeldMessage(_ event: [UInt8], limit: Int) {
        let box = heldMessages ?? HeldMessageBox()
        heldMessages = box
        box.messages.keep(event, limit: limit)
    }

    /// Hands every kept event over, oldest first, and forgets them (the drop count too).
    package func takeHeldMessages() -> (events: Deque<[UInt8]>, dropped: Int) {
        defer { heldMessages = nil }
        return heldMessages?.messages.takeAll() ?? ([], 0)
    }
}

/// How a session ended for good.
package enum SessionEnd: Sendable, Equatable {
    /// `logout`: leave everywhere, user status `loggedOut` if it was the last session.
    case logout
    /// Close frame (or broker-initiated protocol-fault / session-limit close): leave everywhere, `offline`.
    case closed
    /// The hold after an abnormal drop expired: `timeout` everywhere, `offline`.
    case timedOut
    /// Broker shutdown: no presence events (everyone is going), `offline`.
    case shutdown
}
