import RollcallCore

/// The open WebSocket connections by ``ConnectionID``, and when each one's heartbeat is
/// checked next (monotonic milliseconds). Removing a connection cancels its check, so the
/// two never disagree. Lives on the service thread only.
struct ConnectionTable {
    private var records: [ConnectionID: ConnectionRecord] = [:]
    private var heartbeatChecks = TimerQueue<ConnectionID>()

    /// Open connections.
    var count: Int { records.count }
    /// True when no connection is open.
    var isEmpty: Bool { records.isEmpty }
    /// Every open connection, in no particular order.
    var all: Dictionary<ConnectionID, ConnectionRecord>.Values { records.values }

    /// The connection with this id, if it is still open.
    subscript(id: ConnectionID) -> ConnectionRecord? { records[id] }

    /// Adds a just-established connection, its first heartbeat check at `firstCheck`.
    mutating func insert(_ record: ConnectionRecord, firstHeartbeatCheckAt firstCheck: Int64) {
        records[record.id] = record
        heartbeatChecks.schedule(record.id, at: firstCheck)
    }

    /// Forgets a connection lws closed, and its heartbeat check.
    mutating func remove(_ id: ConnectionID) {
        records[id] = nil
        heartbeatChecks.cancel(id)
    }

    /// Forgets every connection (the context is being destroyed).
    mutating func removeAll() {
        records.removeAll()
        heartbeatChecks = TimerQueue()
    }

    /// (Re-)arms the heartbeat check of `id`, if it is still open.
    mutating func scheduleHeartbeatCheck(_ id: ConnectionID, at deadline: Int64) {
        guard records[id] != nil else { return }
        heartbeatChecks.schedule(id, at: deadline)
    }

    /// The earliest heartbeat check.
    mutating func nextHeartbeatCheck() -> Int64? {
        heartbeatChecks.nextDeadline()
    }

    /// The open connections whose heartbeat check is due at `now`, earliest first; their
    /// checks are disarmed (the check itself schedules the next one).
    mutating func dueForHeartbeatCheck(at now: Int64) -> [ConnectionRecord] {
        heartbeatChecks.popDue(now: now).compactMap { records[$0] }
    }
}
