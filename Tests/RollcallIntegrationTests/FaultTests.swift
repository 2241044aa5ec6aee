import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import Testing

/// Issue 5, "Faults": a slow consumer among a thousand healthy subscribers, `kill -9` and
/// SIGTERM under load, and clients vanishing by the thousand. Each test has its own broker
/// and its own client runtime; the suite runs its tests one at a time (they are heavy).
@Suite("Faults", .serialized)
struct FaultTests {
    @Test("a stalled reader is cut with 1013 while 1000 healthy subscribers get every message in order")
    func slowConsumerAmongThousand() throws {
        let broker = try BrokerProcess(config: [
            "limits": ["maxOutboundBytes": 65536, "requestsPerSecond": 100_000, "requestBurst": 100_000],
        ])
        let runtime = try ClientRuntime(options: .init(maxConnections: 1100, rxBufferSize: 4096))
        defer { runtime.shutdown() }
        let channel: JSON = "fanout"

        // The stalled reader: a raw socket with a small receive buffer that never reads.
        let stalled = try SilentWebSocket(port: broker.port, receiveBufferBytes: 4096)
        try stalled.sendText(#"{"id":1,"op":"login","userId":"stalled"}"#)
        try stalled.sendText(#"{"id":2,"op":"join","channel":"fanout","presence":false,"messages":true}"#)

        // 1000 healthy subscribers recording the sequence number of every message.
        let log = SequenceLog(count: 1000)
        let healthy = try (0..<1000).map { index in
            let connection = try RollcallConnection(url: broker.url(), runtime: runtime)
            connection.onEvent = { event in
                if event.name == "message", let n = event["message"]?["n"]?.numberValue?.intValue { log.record(index, n) }
            }
            connection.start()
            return connection
        }
        try loginAndJoin(healthy, prefix: "healthy", channel: channel, presence: false)

        let publisher = try RollcallConnection.connect(url: broker.url(), runtime: runtime)
        #expect(try publisher.login(userId: "publisher").ok)
        // The listing is as of the channel's last event: the joins above 50 come with the
        // next interval event.
        var occupancy = Reply(JSONObject())
        let everyone = try eventually(timeout: 15) {
            occupancy = try publisher.request("getOnlineUsers", ["channel": channel, "includeUserId": false])
            return occupancy["totalOccupancy"]?.numberValue?.intValue == 1001
        }
        #expect(everyone, "\(occupancy)")

        // Publish until the broker cuts the stalled reader, then some more.
        let padding = JSON.string(String(repeating: "x", count: 2000))
        var published = 0
        func publish(_ count: Int) throws -> Reply {
            var last: JSON = .null
            for _ in 0..<count {
                last = publisher.send("publish", ["channel": channel, "message": ["n": .int(published), "pad": padding]])
                published += 1
            }
            return try publisher.waitForReply(id: last, timeout: .seconds(30))
        }
        var cut = false
        while !cut && published < 1000 {
            #expect(try publish(10).ok)
            cut = try (broker.metric("rollcall_slow_consumer_cuts_total") ?? 0) >= 1
        }
        #expect(cut, "the stalled reader was not cut after \(published) messages")

        // Read the stalled socket now: the close frame is sent once it drains.
        let wire = WireResult()
        let reader = Thread { wire.set(stalled.readUntilClosed(timeout: 15)) }
        reader.start()

        let after = try publish(20)
        #expect(after["recipients"]?.numberValue?.intValue == 1000, "the cut session is no longer a recipient: \(after)")
        let total = published
        let everyoneHasAll = eventually(timeout: 60) { log.minimumCount() >= total }
        #expect(everyoneHasAll, "slowest healthy subscriber has \(log.minimumCount()) of \(total)")
        let disorder = log.firstDisorder(expected: total)
        #expect(disorder == nil, "\(disorder ?? "")")
        #expect(healthy.allSatisfy { $0.isOpen }, "every healthy subscriber is still connected")

        #expect(wire.wait(timeout: 20), "the stalled reader's socket did not end")
        let result = wire.value
        #expect(result?.closeCode == 1013, "close code on the wire: \(String(describing: result?.closeCode))")
        #expect(try broker.metric("rollcall_slow_consumer_cuts_total") == 1, "only the stalled reader was cut")
        #expect(eventually { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 1 }, "the cut session is held")
        for connection in healthy { connection.close() }
    }

    @Test("kill -9 under load loses nothing that was committed to storage")
    func killNine() throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-kill9-\(UUID().uuidString).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) } }
        let config: [String: Any] = [
            "storage": ["path": database],
            "limits": ["requestsPerSecond": 10_000, "requestBurst": 10_000],
        ]
        var broker = try BrokerProcess(config: config)
        let runtime = try ClientRuntime(options: .init(maxConnections: 300, rxBufferSize: 4096))
        defer { runtime.shutdown() }

        // Phase 1: 60 users set a custom status and subscribe to three others each.
        let users = (0..<60).map { "user\($0)" }
        func targets(_ index: Int) -> [String] { (1...3).map { users[(index + $0 * 7) % users.count] } }
        let sessions = try connectAll(count: users.count, runtime: runtime, broker: broker)
        try loginAll(sessions, names: users)
        let statusIDs = sessions.enumerated().map { index, session in
            session.send("setCustomStatus", ["customStatus": .string("committed-\(index)")])
        }
        let subscribeIDs = sessions.enumerated().map { index, session in
            session.send("subscribeUserStatus", ["userIds": .array(targets(index).map { .string($0) })])
        }
        for (session, (statusID, subscribeID)) in zip(sessions, zip(statusIDs, subscribeIDs)) {
            #expect(try session.waitForReply(id: statusID, timeout: .seconds(20)).ok)
            #expect(try session.waitForReply(id: subscribeID, timeout: .seconds(20)).ok)
        }

        // Load: 40 more users keep changing their status (1/s each) and publishing.
        let load = StatusLoad(count: 40)
        let loaders = try connectAll(count: 40, runtime: runtime, broker: broker)
        try loginAll(loaders, names: (0..<40).map { "load\($0)" })
        load.start(loaders)

        // Committed: the write-behind commits at least once a second. Wait until load steps
        // were acknowledged more than 1.5 s ago (a condition, not a fixed sleep: a busy
        // machine may be slow to get the load going), with the load still running, then kill -9.
        let warmedUp = eventually(timeout: 30) {
            load.acknowledged() >= 80
                && load.lastAcknowledged(before: Date().addingTimeInterval(-1.5)).contains { ($0 ?? 0) >= 1 }
        }
        #expect(warmedUp, "the load is running: \(load.acknowledged()) statuses acknowledged")
        let killedAt = Date()
        broker.kill()
        load.stop()
        let committedLoad = load.lastAcknowledged(before: killedAt.addingTimeInterval(-1.5))
        #expect(committedLoad.contains { ($0 ?? 0) >= 1 }, "later steps were acknowledged long enough before the kill")

        // Restart on the same file and read everything back.
        broker = try BrokerProcess(config: config)
        let auditor = try RollcallConnection.connect(url: broker.url(), runtime: runtime)
        #expect(try auditor.login(userId: "auditor").ok)
        let everyone = users + (0..<40).map { "load\($0)" }
        let reply = try auditor.request("getUserStatus", ["userIds": .array(everyone.map { .string($0) })])
        #expect(reply.ok, "\(reply)")
        var customStatus: [String: String] = [:]
        for record in reply["statuses"]?.arrayValue ?? [] {
            if let user = record["userId"]?.stringValue { customStatus[user] = record["customStatus"]?.stringValue }
        }
        for (index, user) in users.enumerated() {
            #expect(customStatus[user] == "committed-\(index)", "\(user): \(customStatus[user] ?? "nil")")
        }
        for (index, committed) in committedLoad.enumerated() {
            guard let committed else { continue }
            let stored = customStatus["load\(index)"].flatMap { Int($0.split(separator: "-").last ?? "") } ?? -1
            #expect(stored >= committed, "load\(index): stored step \(stored), acknowledged step \(committed) over 1.5 s before the kill")
        }

        let again = try connectAll(count: users.count, runtime: runtime, broker: broker)
        try loginAll(again, names: users)
        for (index, session) in again.enumerated() {
            let subscriptions = try session.request("getSubscriptions")
            let listed = Set((subscriptions["subscriptions"]?.arrayValue ?? []).compactMap { $0["userId"]?.stringValue })
            #expect(listed == Set(targets(index)), "\(users[index]): \(listed.sorted())")
        }
    }

    @Test("SIGTERM under load: exit 0 within 2 s, every client sees 1001 or a close")
    func sigtermUnderLoad() throws {
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-term-\(UUID().uuidString).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) } }
        let broker = try BrokerProcess(config: [
            "storage": ["path": database],
            "limits": ["requestsPerSecond": 10_000, "requestBurst": 10_000],
        ])
        let runtime = try ClientRuntime(options: .init(maxConnections: 400, rxBufferSize: 4096))
        defer { runtime.shutdown() }
        let sessions = try connectAll(count: 300, runtime: runtime, broker: broker)
        try loginAll(sessions, names: (0..<300).map { "term\($0)" })
        let churn = Churn(channels: 10)
        churn.start(sessions)
        #expect(eventually(timeout: 20) { churn.completed >= 2000 }, "the load is running: \(churn.completed) replies")

        let exit = try #require(broker.stop(timeout: 10), "the broker did not exit")
        #expect(!exit.signaled)
        #expect(exit.status == 0)
        #expect(exit.seconds < 2, "exit took \(exit.seconds) s")
        var codes: [String: Int] = [:]
        for session in sessions {
            let close = try session.waitForClose(timeout: .seconds(10))
            codes[close.code.map { "\($0)" } ?? "dropped", default: 0] += 1
        }
        #expect(codes.keys.allSatisfy { $0 == "1001" || $0 == "dropped" }, "\(codes)")
        #expect((codes["1001"] ?? 0) >= 1, "\(codes)")
        churn.stop()
    }

    @Test("2000 clients vanish at once: the broker keeps serving and the timeouts arrive")
    func clientsVanishByTheThousand() throws {
        let broker = try BrokerProcess(config: [
            "presence": ["timeoutSeconds": 2, "intervalSeconds": 0.5],
        ])
        let channels = (0..<4).map { "vanish:\($0)" }
        let watchers = try channels.enumerated().map { index, channel in
            try ChannelWatcher(broker: broker, userId: "survivor\(index)", channel: channel, publisher: "nobody")
        }
        let runtime = try ClientRuntime(options: .init(maxConnections: 2100, rxBufferSize: 1024))
        defer { runtime.shutdown() }
        let crowd = try connectAll(count: 2000, runtime: runtime, broker: broker)
        for (index, connection) in crowd.enumerated() {
            connection.send("login", ["userId": .string("crowd\(index)")])
        }
        let joins = crowd.enumerated().map { index, connection in
            connection.send("join", ["channel": .string(channels[index % channels.count]), "presence": false])
        }
        for (connection, id) in zip(crowd, joins) {
            let reply = try connection.waitForReply(id: id, timeout: .seconds(60))
            #expect(reply.ok, "\(reply)")
        }
        for watcher in watchers {
            let full = eventually(timeout: 20) { watcher.catchUp(); return watcher.roster.count == 501 }
            #expect(full, "\(watcher.channel): roster of \(watcher.roster.count)")
            #expect(try watcher.checkRoster() == nil)
        }

        for connection in crowd { connection.drop() }
        #expect(try RawHTTP.get(port: broker.port, path: "/healthz").status == 200)
        let newcomer = try broker.session("newcomer")
        #expect(try newcomer.request("join", ["channel": .string(channels[0])]).ok)
        #expect(try newcomer.request("ping").ok)
        #expect(eventually(timeout: 20) { (try? broker.metric("rollcall_sessions{state=\"held\"}")) == 2000 },
                "every vanished session is held")

        // After presence.timeoutSeconds the held sessions time out; rosters come back exact.
        for (index, watcher) in watchers.enumerated() {
            let expected: Set<String> = index == 0 ? ["survivor0", "newcomer"] : ["survivor\(index)"]
            let settled = eventually(timeout: 30) { watcher.catchUp(); return Set(watcher.roster.keys) == expected }
            #expect(settled, "\(watcher.channel): roster of \(watcher.roster.count)")
            #expect(watcher.timedOut == 500, "\(watcher.channel): \(watcher.timedOut) timeouts")
            #expect(try watcher.checkRoster() == nil)
            #expect(watcher.problems.isEmpty, "\(watcher.problems)")
            #expect(watcher.connection.isOpen)
        }
        #expect(try broker.metric("rollcall_sessions{state=\"held\"}") == 0)
        #expect(try broker.session("late").request("ping").ok)
    }

    // MARK: Helpers

    /// Opens `count` connections on `runtime` at once and waits for all handshakes.
    func connectAll(count: Int, runtime: ClientRuntime, broker: BrokerProcess) throws -> [RollcallConnection] {
        let connections = try (0..<count).map { _ in try RollcallConnection(url: broker.url(), runtime: runtime) }
        for connection in connections { connection.start() }
        for connection in connections { try connection.waitUntilOpen(timeout: .seconds(60)) }
        return connections
    }

    /// Logs every connection in (pipelined) and expects success.
    func loginAll(_ connections: [RollcallConnection], names: [String]) throws {
        let ids = zip(connections, names).map { connection, name in connection.send("login", ["userId": .string(name)]) }
        for (connection, id) in zip(connections, ids) {
            let reply = try connection.waitForReply(id: id, timeout: .seconds(60))
            #expect(reply.ok, "\(reply)")
        }
    }

    /// Waits for the handshakes, then logs in `prefix<i>` and joins `channel`, pipelined.
    func loginAndJoin(_ connections: [RollcallConnection], prefix: String, channel: JSON, presence: Bool) throws {
        for connection in connections { try connection.waitUntilOpen(timeout: .seconds(60)) }
        try loginAll(connections, names: connections.indices.map { "\(prefix)\($0)" })
        let joins = connections.map { $0.send("join", ["channel": channel, "presence": .bool(presence), "messages": true]) }
        for (connection, id) in zip(connections, joins) {
            let reply = try connection.waitForReply(id: id, timeout: .seconds(60))
            #expect(reply.ok, "\(reply)")
        }
    }
}

/// The message numbers each of many subscribers received, from the client service thread.
final class SequenceLog: @unchecked Sendable {
    private let lock = NSLock()
    private var numbers: [[Int]]

    init(count: Int) { numbers = Array(repeating: [], count: count) }

    func record(_ subscriber: Int, _ n: Int) { lock.withLock { numbers[subscriber].append(n) } }

    func minimumCount() -> Int { lock.withLock { numbers.map(\.count).min() ?? 0 } }

    /// The first subscriber whose numbers are not exactly `0..<expected`, described.
    func firstDisorder(expected: Int) -> String? {
        lock.withLock { () -> String? in
            let wanted = Array(0..<expected)
            guard let index = numbers.firstIndex(where: { $0 != wanted }) else { return nil }
            let got = numbers[index]
            let at = zip(got, wanted).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, wanted.count)
            return "subscriber \(index): \(got.count) messages, first difference at position \(at)"
        }
    }
}

/// A value handed from a reader thread to the test.
final class WireResult: @unchecked Sendable {
    private let cond = NSCondition()
    private var result: (texts: [String], closeCode: UInt16?, closed: Bool)?

    func set(_ value: (texts: [String], closeCode: UInt16?, closed: Bool)) {
        cond.withLock { result = value; cond.broadcast() }
    }

    var value: (texts: [String], closeCode: UInt16?, closed: Bool)? { cond.withLock { result } }

    func wait(timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while result == nil { if !cond.wait(until: deadline) { break } }
        return result != nil
    }
}

/// Users that set a numbered custom status every 1.2 s each (just under the per-user rate)
/// and publish in between, recording when each step was acknowledged.
final class StatusLoad: @unchecked Sendable {
    private let lock = NSLock()
    private var running = false
    /// Per user: (step, acknowledged at).
    private var acks: [[(step: Int, at: Date)]]
    private var timers: [DispatchSourceTimer] = []

    init(count: Int) { acks = Array(repeating: [], count: count) }

    func start(_ connections: [RollcallConnection]) {
        lock.withLock { running = true }
        for (index, connection) in connections.enumerated() {
            var step = 0
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            timer.schedule(deadline: .now(), repeating: .milliseconds(1200)) // clear of the 1/s rate
            timer.setEventHandler { [self] in
                guard lock.withLock({ running }) else { return }
                let mine = step
                step += 1
                connection.send("setCustomStatus", ["customStatus": .string("load-\(mine)")]) { [self] reply in
                    if reply.ok { lock.withLock { acks[index].append((mine, Date())) } }
                }
                connection.send("publish", ["channel": "load", "message": .int(mine)])
                connection.send("join", ["channel": .string("load:\(mine % 5)")])
            }
            timers.append(timer)
            timer.resume()
        }
    }

    func stop() {
        lock.withLock { running = false }
        for timer in timers { timer.cancel() }
    }

    /// Custom statuses acknowledged so far.
    func acknowledged() -> Int { lock.withLock { acks.map(\.count).reduce(0, +) } }

    /// Per user, the highest step acknowledged before `date` (nil: none).
    func lastAcknowledged(before date: Date) -> [Int?] {
        lock.withLock { acks.map { $0.filter { $0.at < date }.map(\.step).max() } }
    }
}

/// Sessions that keep one request in flight each: join, setState, publish, leave, in a loop,
/// over a few channels with presence.
final class Churn: @unchecked Sendable {
    private let lock = NSLock()
    private var running = false
    private var replies = 0
    let channels: Int

    init(channels: Int) { self.channels = channels }

    var completed: Int { lock.withLock { replies } }

    func start(_ connections: [RollcallConnection]) {
        lock.withLock { running = true }
        for (index, connection) in connections.enumerated() {
            connection.onEvent = { _ in }
            next(connection, channel: .string("churn:\(index % channels)"), step: 0)
        }
    }

    func stop() { lock.withLock { running = false } }

    private func next(_ connection: RollcallConnection, channel: JSON, step: Int) {
        let (op, args): (String, JSON) = switch step % 4 {
        case 0: ("join", ["channel": channel, "presence": true, "state": ["step": .string("\(step)")]])
        case 1: ("setState", ["channel": channel, "state": ["step": .string("\(step)")]])
        case 2: ("publish", ["channel": channel, "message": ["step": .int(step)]])
        default: ("leave", ["channel": channel])
        }
        connection.send(op, args) { [self] _ in
            let go = lock.withLock { () -> Bool in
                replies += 1
                return running
            }
            if go { next(connection, channel: channel, step: step + 1) }
        }
    }
}
