import RollcallProtocol

/// Channel presence (PROTOCOL §4): membership per user across sessions, state, events,
/// announce/interval modes and listings. Owned by ``Broker``.
///
/// STUB — to be implemented (issue 3).
public final class PresenceEngine {
    /// The ops this engine answers.
    public static let ops: Set<String> = [
        "join", "leave", "publish", "setState", "removeState", "getState", "getOnlineUsers", "getUserChannels",
    ]

    let configuration: Configuration
    let clock: BrokerClock
    let outbox: Outbox

    init(configuration: Configuration, clock: BrokerClock, outbox: Outbox) {
        self.configuration = configuration
        self.clock = clock
        self.outbox = outbox
    }

    /// Answers one of ``ops`` for a logged-in session; events go to the outbox.
    func handle(_ request: Request, from session: Session, grant: Grant) throws(BrokerError) -> JSON {
        throw BrokerError(.internal, "\(request.op) is not implemented yet")
    }

    /// The session ended for good: `leave` (logout/close) or `timeout` (hold expired) in each
    /// of its channels where it was the user's last session; nothing on shutdown.
    func sessionEnded(_ session: Session, _ how: SessionEnd) {}

    /// The held session was resumed on a new connection: sends a fresh snapshot for each
    /// presence-enabled channel (after the login reply) and returns `[{channel, channelType}]`.
    func sessionResumed(_ session: Session) -> [JSON] { [] }

    /// Earliest interval flush due.
    var nextDeadline: Timestamp? { nil }

    /// Sends the interval events that are due.
    func fireDueTimers() {}
}

/// Per-session presence bookkeeping, stored on ``Session``.
struct SessionPresence {}
