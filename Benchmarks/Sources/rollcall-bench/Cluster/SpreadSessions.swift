import Foundation
import RollcallClient
import RollcallProtocol

/// Logged-in sessions spread round-robin over several nodes: session `i` is on node
/// `i % urls.count`, through one ``LoadPool`` per node.
final class SpreadSessions {
    let pools: [LoadPool]
    /// Session `i`, on node `i % pools.count`.
    private(set) var sessions: [RollcallConnection] = []

    /// Opens `count` sessions logged in as `userId(i)`; throws unless every one logged in.
    init(urls: [String], count: Int, label: String, userId: @escaping (Int) -> String,
         configure: (Int, RollcallConnection) -> Void = { _, _ in }) throws {
        let nodes = urls.count
        pools = try urls.map { url in
            let perNode = (count + nodes - 1) / nodes
            return try LoadPool(url: url, threads: perNode > 600 ? 2 : 1, connections: perNode + 4, rxBufferSize: 16_384)
        }
        var slots = [RollcallConnection?](repeating: nil, count: count)
        for (node, pool) in pools.enumerated() {
            let indexes = Array(stride(from: node, to: count, by: nodes))
            guard !indexes.isEmpty else { continue }
            let opened = pool.openLoggedIn(count: indexes.count, label: "\(label) node \(node)",
                                           timeout: 30 + Double(indexes.count) / 50,
                                           userId: { userId(indexes[$0]) },
                                           configure: { configure(indexes[$0], $1) })
            for (local, session) in opened.sessions.enumerated() { slots[indexes[local]] = session }
        }
        sessions = slots.compactMap { $0 }
        guard sessions.count == count else {
            shutdown()
            throw StormError("\(label): only \(sessions.count)/\(count) sessions logged in")
        }
    }

    /// The node index of session `i`.
    func node(of index: Int) -> Int { index % pools.count }

    /// Received bytes over every session.
    var bytesReceived: Int { sessions.reduce(0) { $0 + $1.counters.bytesReceived } }

    /// Sends `op` to every session `i` in `indexes` with `arguments(i)`, and waits (up to
    /// `timeout`) for every reply; returns (ok, failed) counts.
    @discardableResult
    func requestAll(_ op: String, _ indexes: [Int], timeout: Double, arguments: (Int) -> JSON) -> (ok: Int, failed: Int) {
        let counters = Counters()
        for index in indexes {
            sessions[index].send(op, arguments(index)) { reply in counters.add(reply.ok ? "ok" : "failed") }
        }
        let deadline = MonotonicSeconds.now + timeout
        while counters["ok"] + counters["failed"] < indexes.count, MonotonicSeconds.now < deadline { usleep(10_000) }
        return (counters["ok"], counters["failed"])
    }

    /// Waits (up to `timeout`) until no session received anything for `quiet` seconds.
    func waitQuiet(quiet: Double = 0.3, timeout: Double = 10) {
        let deadline = MonotonicSeconds.now + timeout
        var last = bytesReceived
        var since = MonotonicSeconds.now
        while MonotonicSeconds.now < deadline, MonotonicSeconds.now - since < quiet {
            usleep(20_000)
            let now = bytesReceived
            if now != last { last = now; since = MonotonicSeconds.now }
        }
    }

    /// Closes every session with 1000, waits a moment for the closes, stops the pools.
    func shutdown() {
        for session in sessions { session.close(code: 1000) }
        let deadline = MonotonicSeconds.now + 3
        while MonotonicSeconds.now < deadline, sessions.contains(where: { $0.currentState != .closed }) { usleep(20_000) }
        for pool in pools { pool.shutdown() }
    }
}
