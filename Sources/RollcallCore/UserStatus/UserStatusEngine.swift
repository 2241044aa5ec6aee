import RollcallProtocol

/// IM-style user status across devices (PROTOCOL §6): status records, custom status,
/// subscriptions and their events. Owned by ``Broker``.
///
/// STUB — to be implemented (issue 4).
public final class UserStatusEngine {
    /// The ops this engine answers.
    public static let ops: Set<String> = [
        "setCustomStatus", "getUserStatus", "subscribeUserStatus", "unsubscribeUserStatus", "getSubscriptions",
    ]

    let configuration: Configuration
    let clock: BrokerClock
    let outbox: Outbox
    let directory: SessionDirectory
    let store: any StatusStore

    init(configuration: Configuration, clock: BrokerClock, outbox: Outbox, directory: SessionDirectory,
         store: any StatusStore) {
        self.configuration = configuration
        self.clock = clock
        self.outbox = outbox
        self.directory = directory
        self.store = store
    }

    /// Throws `CUSTOM_STATUS_TOO_LONG` when `customStatus` is over the limit.
    func validateCustomStatus(_ customStatus: String) throws(BrokerError) {
        if customStatus.utf8.count > configuration.userStatus.customStatusMaxBytes {
            throw BrokerError(.customStatusTooLong, "customStatus is longer than \(configuration.userStatus.customStatusMaxBytes) bytes")
        }
    }

    /// Answers one of ``ops``.
    func handle(_ request: Request, from session: Session) throws(BrokerError) -> JSON {
        throw BrokerError(.internal, "\(request.op) is not implemented yet")
    }

    /// A new session logged in (already in the directory); before the login reply.
    func sessionStarted(_ session: Session, customStatus: String?) {}

    /// A held session was resumed; before the login reply.
    func sessionResumed(_ session: Session, customStatus: String?) {}

    /// After the login reply was queued: the catch-up event.
    func sessionLoggedIn(_ session: Session) {}

    /// The session ended for good (already removed from the directory).
    func sessionEnded(_ session: Session, _ how: SessionEnd) {}

    /// Earliest expiry due.
    var nextDeadline: Timestamp? { nil }

    /// Runs due expiries.
    func fireDueTimers() {}

    /// Broker shutdown: flush durable data.
    func shutdown() {}
}
