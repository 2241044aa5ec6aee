import Foundation
import RollcallClient
import RollcallProtocol

/// Opens a batch of sessions at once (the runtimes bound the handshakes in flight) and logs
/// each in, timing from the first connect to the last login reply.
final class LoginWave {
    /// What one wave achieved.
    struct Outcome {
        let requested: Int
        let loggedIn: Int
        /// Error replies, and connections that ended (or never opened) before their login reply.
        let failed: Int
        /// Neither logged in nor failed when the wave's time was up.
        let unfinished: Int
        /// Seconds from the first connect to the last login reply.
        let seconds: Double
        /// Logins per second over `seconds`.
        var rate: Double { seconds > 0 ? Double(loggedIn) / seconds : 0 }
    }

    private let lock = NSLock()
    private var lastReply = 0.0
    private let counters: Counters
    /// Every session that logged in, in any wave (kept open until the pool shuts down).
    private(set) var sessions: [RollcallConnection] = []

    /// `counters` gets `loggedIn`, `failed` and `closedAfterLogin` (a held session that ended).
    init(counters: Counters) { self.counters = counters }

    /// Opens `count` sessions as users `connect-<first>…`, waits up to `timeout` seconds.
    func open(_ count: Int, firstIndex: Int, pool: LoadPool, timeout: Double, label: String) -> Outcome {
        let waveCounters = Counters()
        let fresh = LockedArray<RollcallConnection?>(repeating: nil, count: count)
        let start = MonotonicSeconds.now
        for offset in 0..<count {
            guard let connection = try? pool.connection() else { waveCounters.add("failed"); continue }
            let login: JSON = ["userId": .string("connect-\(firstIndex + offset)"), "platform": "cli"]
            connection.onOpen = { [weak self, weak connection] in
                guard let connection else { return }
                connection.send(Op.login.rawValue, login) { reply in
                    guard let self else { return }
                    if reply.ok {
                        fresh[offset] = connection
                        self.noteReply()
                        waveCounters.add("loggedIn")
                    } else {
                        waveCounters.add("failed")
                    }
                }
            }
            let counters = self.counters
            connection.onClose = { _ in
                if fresh[offset] == nil { waveCounters.add("failed") } else { counters.add("closedAfterLogin") }
            }
            connection.start()
        }
        let deadline = start + timeout
        var lastPrint = start
        while waveCounters["loggedIn"] + waveCounters["failed"] < count, MonotonicSeconds.now < deadline {
            usleep(10_000)
            if MonotonicSeconds.now - lastPrint >= 1 {
                print("\(label): \(waveCounters["loggedIn"])/\(count) logged in, \(waveCounters["failed"]) failed")
                lastPrint = MonotonicSeconds.now
            }
        }
        let loggedIn = waveCounters["loggedIn"]
        let failed = waveCounters["failed"]
        let unfinished = max(0, count - loggedIn - failed)
        counters.add("loggedIn", loggedIn)
        counters.add("failed", failed)
        counters.add("unfinished", unfinished)
        sessions.append(contentsOf: fresh.values.compactMap { $0 })
        let end = lock.withLock { lastReply }
        return Outcome(requested: count, loggedIn: loggedIn, failed: failed, unfinished: unfinished,
                       seconds: max(0, end - start))
    }

    private func noteReply() {
        let now = MonotonicSeconds.now
        lock.withLock { lastReply = max(lastReply, now) }
    }
}
