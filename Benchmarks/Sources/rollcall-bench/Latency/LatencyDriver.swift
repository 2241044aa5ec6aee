import Foundation
import RollcallClient
import RollcallProtocol

/// The latency load: `members` sessions in one announce-mode channel (member 0 is the prober
/// that calls `setState`; the others time the `stateChanged` they receive), and a background
/// channel with its own receivers and a paced publisher.
final class LatencyDriver {
    static let channel = "bench:latency"
    static let backgroundChannel = "bench:background"

    let counters = Counters()
    let clock: ProbeClock
    /// Background message deliveries, and presence events of the members' channel.
    let backgroundDeliveries: DeliveryTally
    let presenceEvents: DeliveryTally
    /// The other members and the background receivers on plain sockets read on epoll (the
    /// default); nil: on the client library's lws runtimes (`--lws-clients`, before issue 16).
    private let rawPool: RawSocketPool?
    /// The client library's runtimes for members and background receivers (`--lws-clients`);
    /// nil on plain sockets.
    private let pool: LoadPool?
    private let url: String
    private let publisherRuntime: ClientRuntime
    private var members: [RollcallConnection] = []
    private var backgroundReceivers: [RollcallConnection] = []
    private var rawSockets: [RawWebSocket] = []
    private var prober: RollcallConnection?
    /// The prober as a plain socket (the default): each `setState` is written from the
    /// pacing thread right after its send time is stamped, with no client library between.
    private var rawProber: RawWebSocket?
    private var publisher: RollcallConnection?
    private let message = JSON.string(String(repeating: "b", count: 98))

    /// `rawClients`: every member, the prober included, and every background receiver is a
    /// plain socket on one of `threads` epoll reader threads; only the background publisher
    /// is a client-library session.
    init(url: String, members: Int, backgroundReceivers: Int, threads: Int, maxProbes: Int, rawClients: Bool) throws {
        self.url = url
        if rawClients {
            rawPool = RawSocketPool(threads: threads)
            pool = nil
            clock = ProbeClock(capacity: maxProbes, runtimes: [], rawShards: threads)
            backgroundDeliveries = DeliveryTally(shards: threads)
            presenceEvents = DeliveryTally(shards: threads)
        } else {
            let pool = try LoadPool(url: url, threads: threads, connections: members + backgroundReceivers, rxBufferSize: 16_384)
            self.pool = pool
            rawPool = nil
            clock = ProbeClock(capacity: maxProbes, runtimes: pool.runtimes)
            backgroundDeliveries = DeliveryTally(runtimes: pool.runtimes)
            presenceEvents = DeliveryTally(runtimes: pool.runtimes)
        }
        publisherRuntime = try ClientRuntime(options: .init(maxConnections: 8))
    }

    /// Unanswered background publishes.
    var outstandingPublishes: Int { counters["published"] - counters["publishReplies"] }

    /// Opens and joins the members (presence on, messages off), then the background receivers
    /// (messages on, presence off) and the background publisher. Returns false if any failed.
    func open(members count: Int, backgroundReceivers backgroundCount: Int, timeout: Double) -> Bool {
        if let rawPool { return openRaw(rawPool, members: count, backgroundReceivers: backgroundCount, timeout: timeout) }
        guard let pool else { return false }
        let counters = self.counters
        let clock = self.clock
        let presenceEvents = self.presenceEvents
        let (memberSessions, memberSeconds) = pool.openLoggedIn(
            count: count, label: "latency members", timeout: timeout, userId: { "latency-m\($0)" },
            configure: { index, connection in
                let record = clock.recorder(for: connection.runtime)
                let countEvent = presenceEvents.adder(for: connection.runtime)
                connection.onRawEvent = { line in
                    countEvent(1)
                    if let sequence = ProbeScanner.sequence(in: line) { record(sequence) }
                }
                connection.onClose = { _ in counters.add("memberCloses") }
            })
        members = memberSessions.compactMap { $0 }
        print("latency: \(members.count)/\(count) members logged in in \(String(format: "%.1f", memberSeconds)) s")
        let background = backgroundDeliveries
        let prefix = RawEventLine.messagePrefix
        let (receiverSessions, _) = pool.openLoggedIn(
            count: backgroundCount, label: "latency background", timeout: timeout, userId: { "latency-b\($0)" },
            configure: { _, connection in
                let add = background.adder(for: connection.runtime)
                connection.onRawEvent = { line in if RawEventLine.starts(line, with: prefix) { add(1) } }
                connection.onClose = { _ in counters.add("backgroundCloses") }
            })
        backgroundReceivers = receiverSessions.compactMap { $0 }
        guard members.count == count, backgroundReceivers.count == backgroundCount else { return false }
        prober = members.first

        for member in members {
            member.send(Op.join.rawValue, ["channel": .string(Self.channel), "presence": true, "messages": false]) { reply in
                counters.add(reply.ok ? "joined" : "joinFailed")
                if reply["mode"]?.stringValue == "interval" { counters.add("intervalModeReplies") }
                if let occupancy = reply["occupancy"]?.numberValue?.intValue { counters.add("occupancySum", occupancy) }
            }
        }
        for receiver in backgroundReceivers {
            receiver.send(Op.join.rawValue, ["channel": .string(Self.backgroundChannel), "presence": false, "messages": true]) { reply in
                counters.add(reply.ok ? "joined" : "joinFailed")
            }
        }
        let deadline = MonotonicSeconds.now + timeout
        let total = members.count + backgroundReceivers.count
        while counters["joined"] + counters["joinFailed"] < total, MonotonicSeconds.now < deadline { usleep(20_000) }
        publisher = openPublisher()
        return counters["joined"] == total && publisher != nil
    }

    /// The plain-socket way: the members (the prober first) and the background receivers
    /// connect, send `login` (id 1), and once every login is answered `join` (id 2). Each
    /// member but the prober times a probe's `stateChanged` when its reader thread scans the
    /// frame, on the monotonic clock the prober stamps its sends with; the prober's probes are
    /// requests 3, 4, … and their replies are counted as they are read.
    private func openRaw(_ rawPool: RawSocketPool, members count: Int, backgroundReceivers backgroundCount: Int,
                         timeout: Double) -> Bool {
        guard let port = LoopbackHTTP(url: url)?.port else {
            print("latency: plain-socket clients need a loopback broker URL (or use --lws-clients)")
            return false
        }
        let counters = self.counters
        let clock = self.clock
        let presenceEvents = self.presenceEvents

        let eventPrefix = Array(#"{"event":"#.utf8)
        let messagePrefix = RawEventLine.messagePrefix
        let intervalMode = Array(#""mode":"interval""#.utf8)
        let background = backgroundDeliveries
        let start = MonotonicSeconds.now
        // Sockets are spread round-robin over the reader threads: socket i reads on thread i % threads.
        // Socket 0 is the prober (user latency-m0), 1 … count - 1 the other members.
        for index in 0..<(count + backgroundCount) {
            let isProber = index == 0
            let isMember = index < count
            let userId = isMember ? "latency-m\(index)" : "latency-b\(index - count)"
            do {
                let socket = try rawPool.open(port: Int(port)) { socket in
                    let onEvent: (UnsafeRawBufferPointer) -> Void
                    if isProber {
                        let countEvent = presenceEvents.adder(shard: index)
                        onEvent = { _ in countEvent(1) }
                    } else if isMember {
                        let record = clock.recorder(shard: index)
                        let countEvent = presenceEvents.adder(shard: index)
                        onEvent = { line in
                            countEvent(1)
                            if let sequence = ProbeScanner.sequence(in: line) { record(sequence) }
                        }
                    } else {
                        let add = background.adder(shard: index)
                        onEvent = { line in if RawEventLine.starts(line, with: messagePrefix) { add(1) } }
                    }
                    socket.onLine = { line in
                        if RawEventLine.starts(line, with: eventPrefix) {
                            onEvent(line)
                        } else if let reply = RawReplyLine.parse(line) {
                            switch reply.id {
                            case 1: counters.add(reply.ok ? "rawLogins" : "rawLoginFailed")
                            case 2:
                                counters.add(reply.ok ? "joined" : "joinFailed")
                                if ProbeScanner.find(intervalMode, in: line) != nil { counters.add("intervalModeReplies") }
                            default:
                                if isProber { counters.add(reply.ok ? "probeAcks" : "probeErrors") }
                            }
                        }
                    }
                    socket.onClose = { counters.add(isMember ? "memberCloses" : "backgroundCloses") }
                }
                socket.send(text: #"{"id":1,"op":"login","userId":"\#(userId)","platform":"cli"}"#)
                rawSockets.append(socket)
            } catch {
                print("latency: \(userId) failed to connect: \(error)")
                return false
            }
        }
        let total = rawSockets.count
        let deadline = MonotonicSeconds.now + timeout
        while counters["rawLogins"] + counters["rawLoginFailed"] < total, MonotonicSeconds.now < deadline { usleep(20_000) }
        print("latency: \(counters["rawLogins"])/\(total) plain sockets logged in in \(String(format: "%.1f", MonotonicSeconds.now - start)) s")
        guard counters["rawLogins"] == total else { return false }
        rawProber = rawSockets.first

        let memberJoin = #"{"id":2,"op":"join","channel":"\#(Self.channel)","presence":true,"messages":false}"#
        let backgroundJoin = #"{"id":2,"op":"join","channel":"\#(Self.backgroundChannel)","presence":false,"messages":true}"#
        for (index, socket) in rawSockets.enumerated() { socket.send(text: index < count ? memberJoin : backgroundJoin) }
        while counters["joined"] + counters["joinFailed"] < total, MonotonicSeconds.now < deadline { usleep(20_000) }
        publisher = openPublisher()
        return counters["joined"] == total && publisher != nil
    }

    private func openPublisher() -> RollcallConnection? {
        guard let connection = try? RollcallConnection(url: url, subprotocol: "rollcall.v1", runtime: publisherRuntime) else {
            return nil
        }
        connection.start()
        do {
            try connection.waitUntilOpen(timeout: .seconds(10))
            return try connection.login(userId: "latency-publisher", platform: "cli").ok ? connection : nil
        } catch {
            print("latency: background publisher failed: \(error)")
            return nil
        }
    }

    /// Waits until the members' channel has been quiet (no presence event) for `quiet`
    /// seconds, at most `timeout` seconds: the join storm is over.
    func waitForQuiet(quiet: Double, timeout: Double) {
        let deadline = MonotonicSeconds.now + timeout
        var last = presenceEvents.total
        var quietSince = MonotonicSeconds.now
        while MonotonicSeconds.now < deadline, MonotonicSeconds.now - quietSince < quiet {
            usleep(50_000)
            let now = presenceEvents.total
            if now != last { last = now; quietSince = MonotonicSeconds.now }
        }
    }

    /// Sends probe `sequence`: the prober sets its state to `{"probe": "<sequence>"}`.
    func probe(_ sequence: Int) {
        if let rawProber {
            let request = #"{"id":\#(sequence + 3),"op":"setState","channel":"\#(Self.channel)","state":{"probe":"\#(sequence)"}}"#
            clock.stamp(sequence)
            if !rawProber.send(text: request) { counters.add("probeErrors") }
            return
        }
        guard let prober else { return }
        let counters = self.counters
        clock.stamp(sequence)
        prober.send(Op.setState.rawValue, ["channel": .string(Self.channel), "state": ["probe": .string(String(sequence))]]) { reply in
            counters.add(reply.ok ? "probeAcks" : "probeErrors")
        }
    }

    /// Sends `count` background publishes.
    func publishBackground(_ count: Int) {
        guard let publisher, count > 0 else { return }
        let counters = self.counters
        let arguments: JSON = ["channel": .string(Self.backgroundChannel), "message": message]
        for _ in 0..<count {
            counters.add("published")
            publisher.send(Op.publish.rawValue, arguments) { reply in
                counters.add("publishReplies")
                if reply.ok, let recipients = reply["recipients"]?.numberValue?.intValue {
                    counters.add("backgroundExpected", recipients)
                } else {
                    counters.add("publishErrors")
                }
            }
        }
    }

    /// Closes every connection with 1000, gives the closes a moment, and stops the runtimes.
    func shutdown() {
        let all = members + backgroundReceivers + (publisher.map { [$0] } ?? [])
        for connection in all { connection.close(code: 1000) }
        for socket in rawSockets { socket.send(opcode: 0x8, payload: [0x03, 0xE8]) }
        let deadline = MonotonicSeconds.now + 2
        while MonotonicSeconds.now < deadline, all.contains(where: { $0.currentState != .closed }) { usleep(50_000) }
        rawPool?.shutdown()
        pool?.shutdown()
        publisherRuntime.shutdown()
    }
}
