import Foundation
import RollcallClient

/// Waits (polling every 20 ms) until `condition` holds or `timeout` seconds pass.
func eventuallyAsync(timeout: Double = 10, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}

/// A thread-safe call counter.
final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    /// Counts one call; returns the new count.
    func increment() -> Int { lock.withLock { count += 1; return count } }
    var value: Int { lock.withLock { count } }
}

/// Collects a session's state changes as they come.
final class StateLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [RollcallSession.ConnectionState] = []
    init(_ session: RollcallSession) {
        let states = session.states
        Task { for await state in states { self.lock.withLock { self.seen.append(state) } } }
    }
    var states: [RollcallSession.ConnectionState] { lock.withLock { seen } }
}

/// Collects the statuses a session's channels go through, from their roster updates.
final class ChannelStatusLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [ChannelRef: [ChannelStatus]] = [:]
    init(_ session: RollcallSession, channels: [ChannelRef]) {
        for channel in channels {
            let updates = session.rosterUpdates(of: channel)
            Task {
                for await update in updates where update.cause == .status {
                    self.lock.withLock { self.seen[channel, default: []].append(update.status) }
                }
            }
        }
    }
    func statuses(_ channel: ChannelRef) -> [ChannelStatus] { lock.withLock { seen[channel] ?? [] } }
}

/// A broker for the async tests: a generous login timeout, since under a parallel `swift test`
/// blocking tests may hold the cooperative threads a suspended login waits for.
func asyncBroker(_ config: [String: Any] = [:], port: Int = 0) throws -> BrokerProcess {
    try BrokerProcess(config: BrokerProcess.merge(["limits": ["loginTimeoutSeconds": 120]], config), port: port)
}
