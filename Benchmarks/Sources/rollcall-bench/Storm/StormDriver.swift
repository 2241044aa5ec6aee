import Foundation
import RollcallClient
import RollcallProtocol

/// Runs one storm size against one broker: log everyone in, join them paced over
/// `joinSeconds`, make the leavers leave, wait (bounded) until every remaining client's
/// roster is the final set, then check that set against `getOnlineUsers`.
final class StormDriver {
    let plan: StormPlan
    let broker: BrokerTarget
    let threads: Int
    let clientReceiveBytes: Int
    /// Storm clients on plain sockets read with epoll (``RawSocketPool``), paging truncated
    /// snapshots; false: the client library's lws runtimes (the bench before issue 16).
    let rawClients: Bool
    /// Raw clients offer permessage-deflate (the broker was started with it on).
    let deflate: Bool
    private let sampler: ProcessSampler
    private let counters = Counters()
    /// Each distinct event or page line is scanned once, for every client that receives it.
    private let lineCache: StormLineCache
    private var clients: [StormClient] = []
    private var sessions: [RollcallConnection] = []
    private var rawSessions: [RawWebSocket] = []
    /// True while a close counts as a disconnect.
    private let watching = LockedArray<Bool>(repeating: false, count: 1)
    private var outcome: StormOutcome
    private var start = 0.0
    /// The wall clock (Unix seconds) at `start`, to place the broker's wall-clock timestamps.
    private var startWall = 0.0

    init(plan: StormPlan, broker: BrokerTarget, threads: Int, clientReceiveBytes: Int, rawClients: Bool, deflate: Bool = false,
         checkSharedScans: Bool = false) {
        self.plan = plan
        self.deflate = deflate
        self.rawClients = rawClients
        self.broker = broker
        self.threads = threads
        self.clientReceiveBytes = clientReceiveBytes
        sampler = ProcessSampler(pid: broker.pid)
        outcome = StormOutcome(plan: plan)
        lineCache = StormLineCache(users: plan.users, reader: UserNumberReader(prefix: StormPlan.userPrefix),
                                   checksEveryLine: checkSharedScans)
    }

    private var label: String { "storm \(plan.users)" }

    /// The whole run; connections are closed on every path.
    func run() throws -> StormOutcome {
        // Raw clients: the lws pool holds only the observer.
        let pool = try LoadPool(url: broker.url, threads: rawClients ? 1 : threads, connections: rawClients ? 2 : plan.users + 1,
                                rxBufferSize: clientReceiveBytes)
        let rawPool = rawClients ? RawSocketPool(threads: threads, deflate: deflate) : nil
        print("\(label): \(threads) client threads, "
              + (rawClients ? "plain sockets on epoll" : "lws clients, \(clientReceiveBytes)-byte receive chunks"))
        defer {
            watching[0] = false
            for socket in rawSessions { socket.send(opcode: 0x8, payload: [0x03, 0xE8]) }
            rawPool?.shutdown()
            pool.shutdown()
        }
        if let rawPool { try logInRaw(rawPool) } else { try logIn(pool) }
        let observer = try pool.connection()
        observer.start()
        try observer.waitUntilOpen(timeout: .seconds(20))
        _ = try observer.login(userId: "\(StormPlan.userPrefix)observer")

        measureIdle()
        watching[0] = true
        let baseline = receivedTotals()
        let brokerCPU0 = CPUTimes.read(pid: broker.pid) ?? CPUTimes()
        let benchCPU0 = CPUTimes.read(pid: getpid()) ?? CPUTimes()
        start = MonotonicSeconds.now
        startWall = Date().timeIntervalSince1970

        joinAll()
        leaveSome()
        let convergedAt = waitForFinalRosters()
        outcome.brokerCPU = (CPUTimes.read(pid: broker.pid) ?? brokerCPU0) - brokerCPU0
        outcome.benchCPU = (CPUTimes.read(pid: getpid()) ?? benchCPU0) - benchCPU0
        outcome.brokerRSSKiB = sampler.residentKiB() ?? 0
        if let convergedAt {
            outcome.convergedAfterLastJoin = convergedAt - start - outcome.lastJoinAt
            outcome.convergedAfterLastLeave = convergedAt - start - outcome.lastLeaveAt
        }

        waitUntilQuiet()
        outcome.brokerLastFrameAfterLastJoin = brokerLastFrameAfterLastJoin()
        verifyOnlineUsers(observer)
        let totals = receivedTotals()
        outcome.framesReceived = totals.frames - baseline.frames
        outcome.bytesReceived = totals.bytes - baseline.bytes
        outcome.bytesInflated = totals.inflated - baseline.inflated
        outcome.compressedClients = rawSessions.filter(\.isCompressed).count
        outcome.finalClients = remaining.filter(\.isFinal).count
        if convergedAt == nil, outcome.finalClients == remaining.count,
           let last = remaining.compactMap(\.reachedFinalAt).max() {
            outcome.lateConvergenceAfterLastJoin = last - start - outcome.lastJoinAt
        }
        for client in remaining { outcome.tallies.add(client.tallies) }
        for (index, client) in clients.enumerated() where plan.isLeaver(index) { outcome.tallies.add(client.tallies) }
        outcome.disconnects = counters["disconnects"]
        outcome.closeReasons = counters.snapshot.filter { $0.key.hasPrefix("close: ") }
        outcome.joinsOK = counters["joinOK"]; outcome.joinsFailed = counters["joinFailed"]
        outcome.leavesOK = counters["leaveOK"]; outcome.leavesFailed = counters["leaveFailed"]
        (outcome.linesScanned, outcome.linesShared) = lineCache.counts
        outcome.checkedSharedScans = lineCache.checksEveryLine
        return outcome
    }

    /// The clients that stay in the channel.
    private var remaining: [StormClient] { clients.enumerated().filter { !plan.isLeaver($0.offset) }.map(\.element) }

    // MARK: - Phases

    /// The broker's CPU while every session is logged in and nothing happens (2 s): its
    /// background cost (heartbeats, polling), to set against the storm's.
    private func measureIdle() {
        let seconds = 2.0
        let before = CPUTimes.read(pid: broker.pid) ?? CPUTimes()
        usleep(UInt32(seconds * 1e6))
        let after = CPUTimes.read(pid: broker.pid) ?? before
        outcome.idleCPUPerSecond = (after.total - before.total) / seconds
        print("\(label): broker idle with \(plan.users) sessions: \(format(outcome.idleCPUPerSecond)) CPU s per s")
    }

    private func logIn(_ pool: LoadPool) throws {
        let expected = plan.finalSet
        let expectedCount = expected.count
        clients = (0..<plan.users).map {
            StormClient(number: $0, expected: expected, expectedCount: expectedCount, lines: lineCache)
        }
        let counters = counters, watching = watching, clients = clients
        let opened = pool.openLoggedIn(count: plan.users, label: label, timeout: 60 + Double(plan.users) / 100,
                                       userId: StormPlan.userId) { index, connection in
            let client = clients[index]
            connection.onRawEvent = { line in client.receive(line) }
            connection.onClose = { info in
                guard watching[0] else { return }
                counters.add("disconnects")
                counters.add("close: \(info.code.map(String.init) ?? "none") \(info.reason)")
            }
        }
        outcome.loginSeconds = opened.seconds
        sessions = opened.sessions.compactMap { $0 }
        guard sessions.count == plan.users else {
            throw StormError("\(label): only \(sessions.count)/\(plan.users) sessions logged in")
        }
        print("\(label): \(plan.users) sessions logged in in \(String(format: "%.1f", opened.seconds)) s")
    }

    /// Raw clients: opens every socket (handshakes spread over the pool's threads' sockets
    /// one after another), sends each login, and waits for every login reply. Each socket's
    /// lines go to its ``StormClient``; a truncated snapshot is completed with `getOnlineUsers`
    /// pages (request ids from 100), as a real client does.
    private func logInRaw(_ rawPool: RawSocketPool) throws {
        guard let port = LoopbackHTTP(url: broker.url)?.port else { throw StormError("\(label): not a loopback URL") }
        let expected = plan.finalSet
        clients = (0..<plan.users).map {
            StormClient(number: $0, expected: expected, expectedCount: expected.count, lines: lineCache)
        }
        let counters = counters, watching = watching, channel = plan.channel
        let start = MonotonicSeconds.now
        for index in 0..<plan.users {
            let client = clients[index]
            let userId = StormPlan.userId(index)
            let socket = try rawPool.open(port: Int(port)) { socket in
                socket.onLine = { [unowned socket] line in
                    StormRawLine.handle(line, client: client, socket: socket, channel: channel, counters: counters)
                }
                socket.onClose = { [unowned socket] in
                    guard watching[0] else { return }
                    counters.add("disconnects")
                    counters.add("close: raw socket ended (\(socket.endReason ?? "EOF"))")
                }
            }
            socket.send(text: #"{"id":1,"op":"login","userId":"\#(userId)","platform":"cli"}"#)
            rawSessions.append(socket)
        }
        let deadline = MonotonicSeconds.now + 60 + Double(plan.users) / 100
        while counters["loginOK"] + counters["loginFailed"] < plan.users, MonotonicSeconds.now < deadline {
            usleep(20_000)
        }
        outcome.loginSeconds = MonotonicSeconds.now - start
        guard counters["loginOK"] == plan.users else {
            throw StormError("\(label): only \(counters["loginOK"])/\(plan.users) sessions logged in")
        }
        print("\(label): \(plan.users) raw sessions logged in in \(String(format: "%.1f", outcome.loginSeconds)) s")
    }

    private func joinAll() {
        let arguments: JSON = ["channel": .string(plan.channel), "presence": true, "messages": false]
        let rawJoin = #"{"id":2,"op":"join","channel":"\#(plan.channel)","presence":true,"messages":false}"#
        let counters = counters
        outcome.lastJoinAt = paced(count: plan.users, over: plan.joinSeconds, phase: "joining") { index in
            if rawClients {
                rawSessions[index].send(text: rawJoin)
            } else {
                sessions[index].send(Op.join.rawValue, arguments) { reply in counters.add(reply.ok ? "joinOK" : "joinFailed") }
            }
        }
        print("\(label): last join sent at \(format(outcome.lastJoinAt)) s")
    }

    private func leaveSome() {
        let leavers = (0..<plan.users).filter(plan.isLeaver)
        let arguments: JSON = ["channel": .string(plan.channel)]
        let rawLeave = #"{"id":3,"op":"leave","channel":"\#(plan.channel)"}"#
        let counters = counters
        let sent = paced(count: leavers.count, over: plan.leaveSeconds, phase: "leaving") { index in
            if rawClients {
                rawSessions[leavers[index]].send(text: rawLeave)
            } else {
                sessions[leavers[index]].send(Op.leave.rawValue, arguments) { reply in counters.add(reply.ok ? "leaveOK" : "leaveFailed") }
            }
        }
        outcome.lastLeaveAt = leavers.isEmpty ? outcome.lastJoinAt : sent
        print("\(label): \(leavers.count) leaves sent, the last at \(format(outcome.lastLeaveAt)) s")
    }

    /// Calls `action(i)` for `i` in `0..<count`, the i-th at `now + over · i / count`;
    /// returns when the last one was sent, in seconds since the first join.
    private func paced(count: Int, over seconds: Double, phase: String, _ action: (Int) -> Void) -> Double {
        let phaseStart = MonotonicSeconds.now
        let giveUp = phaseStart + seconds + 60
        var sent = 0
        var lastSent = phaseStart
        var nextReport = phaseStart
        while sent < count, MonotonicSeconds.now < giveUp {
            let now = MonotonicSeconds.now
            let due = phaseStart + seconds * Double(sent) / Double(max(1, count))
            if now >= due {
                action(sent)
                sent += 1
                lastSent = now
            } else {
                usleep(UInt32(min(due - now, 0.005) * 1e6))
            }
            if now >= nextReport {
                sample(print: phase, every: 4)
                nextReport = now + 0.25
            }
        }
        return lastSent - start
    }

    /// Waits until every remaining client holds the final roster (and every leave was
    /// answered), at most `convergenceWait` after the last leave. Returns when that was.
    private func waitForFinalRosters() -> Double? {
        let deadline = start + outcome.lastLeaveAt + plan.convergenceWait
        var nextReport = MonotonicSeconds.now
        let stayers = remaining
        outcome.remainingClients = stayers.count
        while MonotonicSeconds.now < deadline {
            let answered = counters["leaveOK"] + counters["leaveFailed"] == plan.leaverCount
            if answered, stayers.allSatisfy(\.isFinal) {
                outcome.waited = MonotonicSeconds.now - start - outcome.lastLeaveAt
                samples = 0
                sample(print: "converged", every: 1)
                let times = stayers.compactMap(\.reachedFinalAt)
                return times.count == stayers.count ? times.max() : nil
            }
            if MonotonicSeconds.now >= nextReport {
                sample(print: "waiting", every: 4)
                nextReport = MonotonicSeconds.now + 0.25
            }
            usleep(50_000)
        }
        outcome.waited = MonotonicSeconds.now - start - outcome.lastLeaveAt
        print("\(label): not converged after \(format(outcome.waited)) s: \(stayers.filter { !$0.isFinal }.count) rosters differ")
        return nil
    }

    /// Waits (at most 10 s) until no client received anything for half a second.
    private func waitUntilQuiet() {
        let deadline = MonotonicSeconds.now + 10
        var last = receivedTotals().bytes
        while MonotonicSeconds.now < deadline {
            usleep(500_000)
            let now = receivedTotals().bytes
            if now == last { return }
            last = now
        }
    }

    /// Broker side of convergence: when the broker wrote its last frame (its `/metrics`
    /// gauge, wall-clock seconds to the ms), in seconds after the last join. Read once the clients are quiet,
    /// before the observer's `getOnlineUsers` makes the broker write again.
    private func brokerLastFrameAfterLastJoin() -> Double? {
        let name = "rollcall_last_frame_written_timestamp_seconds"
        guard let value = MetricsScrape(url: broker.url)?.read([name])?[name], value > 0 else { return nil }
        let seconds = value - startWall - outcome.lastJoinAt
        print("\(label): broker wrote its last frame \(format(seconds)) s after the last join")
        return seconds
    }

    /// Pages `getOnlineUsers` (1000 a page) and compares it with the final set.
    private func verifyOnlineUsers(_ observer: RollcallConnection) {
        var listed = UserSet(capacity: plan.users)
        var page: JSON = nil
        var count = 0
        var foreign = 0
        for _ in 0...(plan.users / 1000 + 2) {
            var arguments: JSONObject = ["channel": .string(plan.channel), "pageSize": 1000]
            if !page.isNull { arguments["page"] = page }
            // A generous timeout: after a big storm the client threads may still be busy.
            guard let result = try? observer.call(Op.getOnlineUsers.rawValue, .object(arguments), timeout: .seconds(30)) else {
                print("\(label): getOnlineUsers got no reply")
                break
            }
            for entry in result["users"]?.arrayValue ?? [] {
                let id = entry["userId"]?.stringValue ?? ""
                if id.hasPrefix(StormPlan.userPrefix), let n = Int(id.dropFirst(StormPlan.userPrefix.count)), n < plan.users {
                    listed.set(n, true)
                } else {
                    foreign += 1
                }
                count += 1
            }
            page = result["nextPage"] ?? nil
            if page.isNull { break }
        }
        outcome.onlineUsersCount = count
        outcome.onlineUsersMatch = foreign == 0 && count == listed.count && listed.words == plan.finalSet.words
        print("\(label): getOnlineUsers lists \(count) users; equals the final set: \(outcome.onlineUsersMatch)")
    }

    // MARK: - Progress

    private var samples = 0

    /// Adds a timeline point (for the chart) and prints a progress line every `every` samples.
    private func sample(print phase: String, every: Int) {
        let elapsed = MonotonicSeconds.now - start
        let joined = counters["joinOK"]
        let final = remaining.filter(\.isFinal).count
        outcome.timeline.append([elapsed, Double(joined), Double(final)])
        samples += 1
        guard (samples - 1) % every == 0 else { return }
        let cpu = (sampler.cpuSeconds() ?? 0)
        print("\(label): \(phase) t=\(format(elapsed)) s joined \(joined)/\(plan.users) left \(counters["leaveOK"])/\(plan.leaverCount) "
              + "final rosters \(final)/\(plan.users - plan.leaverCount) disconnects \(counters["disconnects"]) broker CPU \(format(cpu)) s")
    }

    private func receivedTotals() -> (frames: Int, bytes: Int, inflated: Int) {
        var frames = 0, bytes = 0, inflated = 0
        for socket in rawSessions {
            frames += socket.messagesReceived
            bytes += socket.bytesReceived
            inflated += socket.bytesInflated
        }
        for session in sessions {
            let counts = session.counters
            frames += counts.framesReceived
            bytes += counts.bytesReceived
        }
        return (frames, bytes, inflated)
    }

    private func format(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// A storm run that could not proceed.
struct StormError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
