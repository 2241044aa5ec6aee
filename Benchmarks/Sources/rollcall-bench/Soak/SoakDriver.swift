import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol

/// Owns the soak sessions: one slot per simulated user, driven from one thread; client
/// callbacks only bump counters. The sockets are spread over several client runtimes (one
/// lws service thread each) so that event handling for thousands of sockets keeps up.
final class SoakDriver {
    /// One simulated user and its current connection.
    private final class Slot: @unchecked Sendable {
        let userId: String
        /// Which runtime serves this slot's connections.
        let runtimeIndex: Int
        var connection: RollcallConnection?
        /// Channels joined (driver thread only).
        var joined: Set<Int> = []
        init(userId: String, runtimeIndex: Int) { self.userId = userId; self.runtimeIndex = runtimeIndex }
    }

    let counters = Counters()
    private let url: String
    private let channels: Int
    private let runtimes: [ClientRuntime]
    private let slots: [Slot]
    private var random = SystemRandomNumberGenerator()
    private var stateVersion = 0

    init(url: String, sessions: Int, channels: Int, threads: Int) throws {
        self.url = url
        self.channels = channels
        let count = max(1, threads)
        runtimes = try (0..<count).map { _ in
            try ClientRuntime(options: .init(maxConnections: sessions / count + 512, rxBufferSize: 1024,
                                             maxConcurrentHandshakes: max(32, 256 / count), epoll: true))
        }
        slots = (0..<sessions).map { Slot(userId: "soak-\($0)", runtimeIndex: $0 % count) }
    }

    /// Sessions whose connection is open right now.
    var openCount: Int { slots.reduce(0) { $0 + (($1.connection?.isOpen ?? false) ? 1 : 0) } }

    /// Connects and logs in every slot (joining two channels each); waits up to `timeout`
    /// seconds and returns how many logged in.
    func openAll(timeout: Double) -> Int {
        for slot in slots { connect(slot, joinCount: 2) }
        let deadline = Date().addingTimeInterval(timeout)
        var lastPrint = Date()
        while counters["logins"] < slots.count, Date() < deadline {
            usleep(100_000)
            if Date().timeIntervalSince(lastPrint) >= 2 {
                print("soak: \(counters["logins"]) logged in, \(counters["connectFailures"]) connect failures")
                lastPrint = Date()
            }
        }
        return counters["logins"]
    }

    /// Performs `operations` random churn steps.
    func churn(operations: Int) {
        for _ in 0..<operations {
            let slot = slots[Int.random(in: 0..<slots.count, using: &random)]
            guard let connection = slot.connection, connection.isOpen else {
                if slot.connection?.currentState != .connecting { connect(slot, joinCount: 1) }
                continue
            }
            counters.add("ops")
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30: join(slot, on: connection, channel: Int.random(in: 0..<channels, using: &random))
            case 30..<55: leave(slot, on: connection)
            case 55..<85: setState(slot, on: connection)
            case 85..<93:
                counters.add("drops")
                connection.drop()
                connect(slot, joinCount: 1)
            default:
                counters.add("closes")
                connection.close(code: 1000)
                connect(slot, joinCount: 1)
            }
        }
    }

    /// Ends every connection and the client runtime.
    func shutdown() {
        for slot in slots { slot.connection?.close(code: 1000) }
        usleep(500_000)
        for runtime in runtimes { runtime.shutdown() }
    }

    // MARK: Steps

    private func connect(_ slot: Slot, joinCount: Int) {
        counters.add("connects")
        guard let connection = try? RollcallConnection(url: url, subprotocol: "rollcall.v1", runtime: runtimes[slot.runtimeIndex]) else {
            counters.add("connectFailures")
            return
        }
        slot.connection = connection
        slot.joined = []
        let firstChannels = (0..<joinCount).map { _ in Int.random(in: 0..<channels, using: &random) }
        slot.joined.formUnion(firstChannels)
        let counters = self.counters
        let userId = slot.userId
        connection.onRawEvent = { _ in counters.add("events") }  // counted, not parsed
        connection.onClose = { info in if !info.closedByServer { return }; counters.add("serverCloses") }
        connection.onOpen = { [weak connection] in
            guard let connection else { return }
            connection.send(Op.login.rawValue, ["userId": .string(userId), "platform": "cli", "presenceTimeout": 2]) { reply in
                counters.add(reply.ok ? "logins" : "loginErrors")
                guard reply.ok else { return }
                for channel in Set(firstChannels) {
                    connection.send(Op.join.rawValue, ["channel": .string("soak:\(channel)")]) { reply in
                        counters.add("replies")
                        if !reply.ok { counters.add("errorReplies"); counters.add("error.\(reply.errorCodeText ?? "?")") }
                    }
                }
            }
        }
        connection.start()
    }

    private func join(_ slot: Slot, on connection: RollcallConnection, channel: Int) {
        slot.joined.insert(channel)
        send(connection, "join", ["channel": .string("soak:\(channel)")])
    }

    private func leave(_ slot: Slot, on connection: RollcallConnection) {
        guard let channel = slot.joined.randomElement(using: &random) else { return }
        slot.joined.remove(channel)
        send(connection, "leave", ["channel": .string("soak:\(channel)")])
    }

    private func setState(_ slot: Slot, on connection: RollcallConnection) {
        guard let channel = slot.joined.randomElement(using: &random) else { return }
        stateVersion += 1
        send(connection, "setState", ["channel": .string("soak:\(channel)"),
                                      "state": ["mood": .string("m\(stateVersion % 50)"), "n": .string(String(stateVersion % 1000))]])
    }

    private func send(_ connection: RollcallConnection, _ op: String, _ args: JSON) {
        let counters = self.counters
        connection.send(op, args) { reply in
            counters.add("replies")
            if !reply.ok { counters.add("errorReplies"); counters.add("error.\(reply.errorCodeText ?? "?")") }
        }
    }
}
