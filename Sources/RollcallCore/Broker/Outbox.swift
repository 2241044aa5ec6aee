import RollcallProtocol

/// Collects the actions one inbound event produces, in order.
package final class Outbox {
    /// The actions so far.
    public internal(set) var actions: [Action] = []
    /// Counts events handed out, for metrics.
    var eventsQueued = 0
    /// Where fan-out sizes go (the broker's ``Broker/instrumentation``).
    weak var instrumentation: (any BrokerInstrumentation)?
    /// Webhooks want `presence` events (`webhooks.url` set and the kind listed).
    package let notifiesPresence: Bool
    /// Webhooks want `channel` events.
    package let notifiesChannels: Bool
    /// Webhooks want `userStatus` events.
    package let notifiesUserStatus: Bool

    /// An outbox that emits ``Action/notifyBackend(_:)`` for the kinds in `backendKinds`.
    init(backendKinds: Set<BackendEvent.Kind> = []) {
        notifiesPresence = backendKinds.contains(.presence)
        notifiesChannels = backendKinds.contains(.channel)
        notifiesUserStatus = backendKinds.contains(.userStatus)
    }

    /// Queues an event for the application's backend (the caller checked that its kind is wanted).
    package func notifyBackend(_ kind: BackendEvent.Kind, _ bytes: [UInt8]) {
        actions.append(.notifyBackend(BackendEvent(kind: kind, bytes: bytes)))
    }

    /// Queues `bytes` for the session's connection; dropped while the session is held
    /// (a resumed session is rebuilt from fresh snapshots).
    package func send(_ bytes: [UInt8], to session: Session) {
        guard let connection = session.connection else { return }
        actions.append(.send(connection, bytes, .event))
        eventsQueued += 1
    }

    /// Queues a `message` event for the session; while it is held the event is kept for its
    /// resume instead, up to `heldLimit` bytes (PROTOCOL §5).
    package func sendMessage(_ bytes: [UInt8], to session: Session, heldLimit: Int) {
        guard session.connection != nil else {
            session.keepHeldMessage(bytes, limit: heldLimit)
            return
        }
        send(bytes, to: session)
    }

    /// Queues one event's `bytes` for every session in `sessions` (held ones are skipped, as
    /// by ``send(_:to:)-(_,Session)``) and reports the fan-out size.
    package func broadcast(_ bytes: [UInt8], to sessions: some Sequence<Session>) {
        fanOut { for session in sessions { send(bytes, to: session) } }
    }

    /// Runs `queueEvent`, which sends one event to its recipients, and reports how many
    /// sessions it was queued for.
    package func fanOut(_ queueEvent: () -> Void) {
        let before = eventsQueued
        queueEvent()
        instrumentation?.eventFannedOut(recipients: eventsQueued - before)
    }

    /// Queues `bytes` for a connection.
    func send(_ bytes: [UInt8], to connection: ConnectionID) {
        actions.append(.send(connection, bytes, .event))
    }

    /// Asks the transport to close a connection.
    func close(_ connection: ConnectionID, _ code: CloseCode, reason: String) {
        actions.append(.close(connection, code, reason: reason))
    }

    /// Inserts `action` at `position` (used to put a reply before the events its request caused).
    func insert(_ action: Action, at position: Int) {
        actions.insert(action, at: position)
    }

    func drain() -> [Action] {
        let out = actions
        // Not `removeAll(keepingCapacity: true)`: `out` still holds the buffer, so that made a
        // new one as large as the largest burst ever, on every event, for ever (heaptrack, idle
        // benchmark: ~330-650 KiB of them live after a join burst).
        actions = []
        return out
    }
}
