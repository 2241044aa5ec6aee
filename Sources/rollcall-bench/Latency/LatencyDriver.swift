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
    private let pool: LoadPool
    private let publisherRuntime: ClientRuntime
    private var members: [RollcallConnection] = []
    private var backgroundReceivers: [RollcallConnection] = []
    private var prober: RollcallConnection?
    private var publisher: RollcallConnection?
    private let message = JSON.string(String(repeating: "b", count: 98))

    init(url: String, members: Int, backgroundReceivers: Int, threads: Int, maxProbes: Int) throws {
        pool = try LoadPool(url: url, threads: threads, connections: members + backgroundReceivers, rxBufferSize: 16_384)
        publisherRuntime = try ClientRuntime(options: .init(maxConnections: 8))
        clock = ProbeClock(capacity: maxProbes, runtimes: pool.runtimes)
        backgroundDeliveries = DeliveryTally(runtimes: pool.runtimes)
        presenceEvents = DeliveryTally(runtimes: pool.runtimes)
    }

    /// Unanswered background publishes.
    var outstandingPublishes: Int { counters["published"] - counters["publishReplies"] }

    /// Opens and joins the members (presence on, messages off), then the background receivers
    /// (messages on, presence off) and the background publisher. Returns false if any failed.
    func open(members count: Int, backgroundReceivers backgroundCount: Int, timeout: Double) -> Bool {
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
            member.send("join", ["channel": .string(Self.channel), "presence": true, "messages": false]) { reply in
                counters.add(reply.ok ? "joined" : "joinFailed")
                if reply["mode"]?.stringValue == "interval" { counters.add("intervalModeReplies") }
                if let occupancy = reply["occupancy"]?.numberValue?.intValue { counters.add("occupancySum", occupancy) }
            }
        }
        for receiver in backgroundReceivers {
            receiver.send("join", ["channel": .string(Self.backgroundChannel), "presence": false, "messages": true]) { reply in
                counters.add(reply.ok ? "joined" : "joinFailed")
            }
        }
        let deadline = MonotonicSeconds.now + timeout
        let total = members.count + backgroundReceivers.count
        while counters["joined"] + counters["joinFailed"] < total, MonotonicSeconds.now < deadline { usleep(20_000) }
        publisher = openPublisher()
        return counters["joined"] == total && publisher != nil
    }

    private func openPublisher() -> RollcallConnection? {
        guard let connection = try? RollcallConnection(url: pool.url, subprotocol: "rollcall.v1", runtime: publisherRuntime) else {
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
        guard let prober else { return }
        let counters = self.counters
        clock.stamp(sequence)
        prober.send("setState", ["channel": .string(Self.channel), "state": ["probe": .string(String(sequence))]]) { reply in
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
            publisher.send("publish", arguments) { reply in
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
        let deadline = MonotonicSeconds.now + 2
        while MonotonicSeconds.now < deadline, all.contains(where: { $0.currentState != .closed }) { usleep(50_000) }
        pool.shutdown()
        publisherRuntime.shutdown()
    }
}
