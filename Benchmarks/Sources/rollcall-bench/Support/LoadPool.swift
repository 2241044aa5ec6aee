import Foundation
import RollcallClient
import RollcallProtocol

/// Several client runtimes, each with its own libwebsockets service thread, sharing one
/// scenario's connections round-robin so that parsing and writing for thousands of sockets
/// is spread over threads rather than bottlenecked on one.
final class LoadPool {
    /// The runtimes, one service thread each.
    let runtimes: [ClientRuntime]
    let url: String
    private var next = 0

    /// `threads` runtimes sized together for `connections` connections.
    init(url: String, threads: Int, connections: Int, rxBufferSize: Int = 4096) throws {
        self.url = url
        let count = max(1, threads)
        let perRuntime = connections / count + 64
        runtimes = try (0..<count).map { _ in
            try ClientRuntime(options: .init(maxConnections: perRuntime, rxBufferSize: rxBufferSize,
                                             maxConcurrentHandshakes: max(16, 256 / count), epoll: true))
        }
    }

    /// A new (not yet started) connection on the next runtime.
    func connection() throws -> RollcallConnection {
        let runtime = runtimes[next % runtimes.count]
        next += 1
        return try RollcallConnection(url: url, subprotocol: "rollcall.v1", runtime: runtime)
    }

    /// Opens `count` connections and logs each in as `userId(i)` (extra `login` arguments from
    /// `loginArguments`), all at once with the runtimes' handshake throttling. Waits up to
    /// `timeout` seconds, printing progress, and returns the connections whose login succeeded,
    /// in index order (nil where it failed) plus the seconds it took.
    func openLoggedIn(count: Int, label: String, timeout: Double,
                      userId: (Int) -> String, loginArguments: [String: JSON] = [:],
                      configure: (Int, RollcallConnection) -> Void = { _, _ in }) -> (sessions: [RollcallConnection?], seconds: Double) {
        let counters = Counters()
        let results = LockedArray<RollcallConnection?>(repeating: nil, count: count)
        let start = Date()
        for index in 0..<count {
            guard let connection = try? connection() else { counters.add("failed"); continue }
            configure(index, connection)
            var arguments = loginArguments
            arguments["userId"] = .string(userId(index))
            if arguments["platform"] == nil { arguments["platform"] = "cli" }
            let login = JSON.object(JSONObject(arguments.map { ($0.key, $0.value) }))
            connection.onOpen = { [weak connection] in
                guard let connection else { return }
                connection.send(Op.login.rawValue, login) { reply in
                    if reply.ok { results[index] = connection; counters.add("ok") } else { counters.add("failed") }
                }
            }
            let previousClose = connection.onClose
            connection.onClose = { info in
                if results[index] == nil { counters.add("failed") }
                previousClose?(info)
            }
            connection.start()
        }
        let deadline = start.addingTimeInterval(timeout)
        var lastPrint = Date()
        while counters["ok"] + counters["failed"] < count, Date() < deadline {
            usleep(20_000)
            if Date().timeIntervalSince(lastPrint) >= 1 {
                print("\(label): \(counters["ok"])/\(count) logged in, \(counters["failed"]) failed")
                lastPrint = Date()
            }
        }
        return (results.values, Date().timeIntervalSince(start))
    }

    /// Closes every runtime (and the connections they hold).
    func shutdown() {
        for runtime in runtimes { runtime.shutdown() }
    }
}

/// A fixed-size array behind a lock, filled from client callbacks.
final class LockedArray<Element>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Element]

    init(repeating value: Element, count: Int) { storage = Array(repeating: value, count: count) }

    subscript(index: Int) -> Element {
        get { lock.lock(); defer { lock.unlock() }; return storage[index] }
        set { lock.lock(); storage[index] = newValue; lock.unlock() }
    }

    /// A copy of every element.
    var values: [Element] { lock.lock(); defer { lock.unlock() }; return storage }
}

/// Monotonic seconds, for durations inside one process.
enum MonotonicSeconds {
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
