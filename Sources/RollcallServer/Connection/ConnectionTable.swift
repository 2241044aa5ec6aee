import HeapModule
import RollcallCore

/// The open WebSocket connections by ``ConnectionID``, and when each one's heartbeat is
/// checked next (monotonic milliseconds). Removing a connection cancels its check, so the
/// two never disagree. Lives on the service thread only.
///
/// The checks are a heap of `(deadline, generation, id)`; the live generation of each
/// connection's check is kept in its record (``ConnectionRecord/heartbeatGeneration``), not in
/// a second table by id (a general ``TimerQueue`` keeps one: ~38 B per idle connection in
/// the idle benchmark). Replaced checks and those of removed connections are dropped when
/// they reach the top, so every operation is O(log n) and nothing is ever scanned.
struct ConnectionTable {
    private struct Check: Comparable {
        let deadline: Int64
        let generation: UInt32
        let id: ConnectionID
        static func < (a: Check, b: Check) -> Bool {
            (a.deadline, a.id.rawValue, a.generation) < (b.deadline, b.id.rawValue, b.generation)
        }
    }

    private var records: [ConnectionID: ConnectionRecord] = [:]
    /// The last key handed out by ``newKey()``.
    private var lastKey: UInt64 = 0
    private var heartbeatChecks = Heap<Check>()

    /// Open connections.
    var count: Int { records.count }
    /// True when no connection is open.
    var isEmpty: Bool { records.isEmpty }
    /// Every open connection, in no particular order.
    var all: Dictionary<ConnectionID, ConnectionRecord>.Values { records.values }

    /// The connection with this id, if it is still open.
    subscript(id: ConnectionID) -> ConnectionRecord? { records[id] }

    /// Adds a just-established connection, its first heartbeat check at `firstCheck`.
    /// A key for lws' per-connection space, never handed out before: a WebSocket connection's
    /// ``ConnectionID`` and an HTTP exchange's key come from this one sequence, so a key names
    /// one connection only, whichever kind it is.
    mutating func newKey() -> UInt64 {
        lastKey += 1
        return lastKey
    }

    mutating func insert(_ record: ConnectionRecord, firstHeartbeatCheckAt firstCheck: Int64) {
        records[record.id] = record
        arm(record, at: firstCheck)
    }

    /// Forgets a connection lws closed, and its heartbeat check.
    mutating func remove(_ id: ConnectionID) {
        records[id] = nil
    }

    /// Forgets every connection (the context is being destroyed).
    mutating func removeAll() {
        records.removeAll()
        heartbeatChecks = Heap()
    }

    /// (Re-)arms the heartbeat check of `id`, if it is still open.
    mutating func scheduleHeartbeatCheck(_ id: ConnectionID, at deadline: Int64) {
        guard let record = records[id] else { return }
        arm(record, at: deadline)
    }

    /// The earliest heartbeat check.
    mutating func nextHeartbeatCheck() -> Int64? {
        dropStaleTop()
        return heartbeatChecks.min?.deadline
    }

    /// The open connections whose heartbeat check is due at `now`, earliest first; their
    /// checks are disarmed (the check itself schedules the next one).
    mutating func dueForHeartbeatCheck(at now: Int64) -> [ConnectionRecord] {
        var due: [ConnectionRecord] = []
        while true {
            dropStaleTop()
            guard let top = heartbeatChecks.min, top.deadline <= now, let record = records[top.id] else { break }
            heartbeatChecks.removeMin()  // the only check of its generation: now disarmed
            due.append(record)
        }
        return due
    }

    private mutating func arm(_ record: ConnectionRecord, at deadline: Int64) {
        record.heartbeatGeneration &+= 1
        heartbeatChecks.insert(Check(deadline: deadline, generation: record.heartbeatGeneration, id: record.id))
        compactIfMostlyStale()
    }

    /// True when `check` is the latest check of an open connection.
    private func isLive(_ check: Check) -> Bool {
        records[check.id]?.heartbeatGeneration == check.generation
    }

    private mutating func dropStaleTop() {
        while let top = heartbeatChecks.min, !isLive(top) { heartbeatChecks.removeMin() }
    }

    private mutating func compactIfMostlyStale() {
        guard heartbeatChecks.count > 1024, heartbeatChecks.count > records.count * 4 else { return }
        heartbeatChecks = Heap(heartbeatChecks.unordered.filter(isLive))
    }
}
