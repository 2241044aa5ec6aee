import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallTestSupport

/// One user of a chaos run, driven by its own thread during the churn: one session at a time,
/// on any node, that it resumes after its connection drops (or gives up and logs in afresh).
///
/// It knows what it asked for and what the broker confirmed — per channel, whether it is a
/// member and its state (``Intent``), and its custom status — and re-sends whatever was not
/// confirmed (answered `UNAVAILABLE` past its retries, or not answered at all), as a client
/// that keeps its intent does. From its events it rebuilds each channel's roster with the
/// client library's ``RollcallClient/Roster``, and records what breaks an invariant on the
/// way (a `seq` gap a watcher sees, a message seen twice, a membership it lost).
///
/// A **watcher** joins every channel once and never changes its presence again, so every
/// `seq` step is an event it must see: it is the gap detector. A **churner** joins, leaves,
/// sets state (with and without TTL), publishes, sets its custom status, drops its connection
/// and resumes, or gives up its session.
final class ChaosClient: @unchecked Sendable {
    enum Role: String { case churner, watcher }

    /// What the client wants in one channel, and whether the broker confirmed it.
    struct Intent {
        var member: Bool
        var state: [String: String]
        var confirmed: Bool
    }

    /// Counters of what the client did, summed into the run's report.
    struct Stats {
        var ops: [String: Int] = [:]
        var unavailable = 0
        var noAnswer = 0
        var resumed = 0
        var freshLogins = 0
        var drops = 0
        var givenUp = 0
        var halfDoneLeaves = 0

        mutating func add(_ other: Stats) {
            for (op, count) in other.ops { ops[op, default: 0] += count }
            unavailable += other.unavailable
            noAnswer += other.noAnswer
            resumed += other.resumed
            freshLogins += other.freshLogins
            drops += other.drops
            givenUp += other.givenUp
            halfDoneLeaves += other.halfDoneLeaves
        }
    }

    /// How one request ended.
    enum Outcome {
        case ok(Reply)
        /// A definite error reply (not `UNAVAILABLE` or `RATE_LIMITED`).
        case refused(Reply)
        /// Still `UNAVAILABLE` when the client stopped retrying.
        case unavailable
        /// No reply: timed out, or the connection ended.
        case noAnswer
    }

    static let requestTimeout: Duration = .milliseconds(2500)

    let userId: String
    let platform: String
    let role: Role
    let channels: [String]
    private let cluster: ChaosCluster
    private let clock: ChaosClock
    private let runtime: ClientRuntime
    private var random: SplitMix64

    private(set) var connection: RollcallConnection?
    /// The node of the current connection (0-based).
    private(set) var node = 0
    private(set) var sessionId: String?
    private var resumeToken: String?
    private var consumed = 0
    private(set) var intents: [String: Intent] = [:]
    /// The custom status asked for (nil: none) and whether the broker confirmed it.
    private(set) var customStatus: String?
    private(set) var customStatusConfirmed = true
    /// ``ChaosCluster/dataLossesSeen`` when this client last looked: a loss since then takes
    /// its custom status with it, so the client sets it again.
    private var dataLossesSeen = 0
    private var publishCounter = 0
    /// Rosters of the current connection, one per channel that sent a snapshot on it.
    private(set) var rosters: [String: RollcallClient.Roster] = [:]
    private var pendingLeaves: [String: String] = [:]
    private var lastMessage: [String: Int] = [:]
    private(set) var violations: [ChaosViolation] = []
    /// What the client did and saw, time-stamped on the run's clock (the last 2000 entries).
    private(set) var history: [(at: Double, text: String)] = []
    private(set) var stats = Stats()
    /// True when the last op went through an `UNAVAILABLE` answer before its final one.
    private var sawUnavailable = false

    /// Whether a message seen twice (or out of order) is recorded as a violation.
    private let checkMessages: Bool

    init(userId: String, role: Role, platform: String, channels: [String], cluster: ChaosCluster,
         clock: ChaosClock, runtime: ClientRuntime, seed: UInt64, node: Int, checkMessages: Bool) {
        self.checkMessages = checkMessages
        self.userId = userId
        self.role = role
        self.platform = platform
        self.channels = channels
        self.cluster = cluster
        self.clock = clock
        self.runtime = runtime
        self.node = node
        random = SplitMix64(seed: seed)
        if role == .watcher {
            for channel in channels { intents[channel] = Intent(member: true, state: [:], confirmed: false) }
        }
    }

    // MARK: - Churn

    /// The churn loop: one step, a pause, until the clock stops.
    func run() {
        while !clock.isStopping {
            step()
            let pause = role == .watcher ? uniform(0.15, 0.35) : uniform(0.03, 0.15)
            clock.pace(pause)
        }
    }

    /// One step: get a session, apply what arrived, re-send an unconfirmed intent, or make a
    /// random operation (watchers only ping, to notice a dead connection).
    func step(interruptible: Bool = true) {
        guard ensureSession(interruptible: interruptible) else { return }
        catchUp()
        let losses = cluster.dataLossesSeen
        if losses != dataLossesSeen {
            dataLossesSeen = losses
            if customStatus != nil {
                log("note: the cluster lost its data; sets its custom status again")
                customStatusConfirmed = false
            }
        }
        if let channel = channels.first(where: { intents[$0].map { !$0.confirmed } ?? false }) {
            reissue(channel, interruptible: interruptible)
            return
        }
        if !customStatusConfirmed {
            setCustomStatus(customStatus, interruptible: interruptible)
            return
        }
        guard role == .churner, interruptible else {
            if case .noAnswer = perform("ping", [:], interruptible: interruptible) { dropConnection("ping unanswered") }
            return
        }
        randomOperation()
    }

    /// True once the client has a session and every intent of it is confirmed.
    var isSettled: Bool {
        connection?.closeInfo == nil && connection != nil && customStatusConfirmed
            && intents.values.allSatisfy(\.confirmed)
    }

    private func randomOperation() {
        let channel = channels[Int(random.next() % UInt64(channels.count))]
        let intent = intents[channel] ?? Intent(member: false, state: [:], confirmed: true)
        let roll = random.next() % 100
        switch roll {
        case ..<22:
            join(channel, state: randomState())
        case ..<32:
            if intent.member { leave(channel) } else { join(channel, state: randomState()) }
        case ..<52:
            if intent.member { setState(channel, randomState()) } else { join(channel, state: randomState()) }
        case ..<64:
            if intent.member { typing(channel) } else { publish(channel) }
        case ..<79:
            publish(channel)
        case ..<86:
            let choices: [String?] = [nil, "busy", "away", "lunch", "🏖 beach"]
            setCustomStatus(choices[Int(random.next() % UInt64(choices.count))], interruptible: true)
        case ..<97:
            stats.drops += 1
            dropConnection("drop (will resume)")
        default:
            giveUp()
        }
    }

    private func randomState() -> [String: String] {
        ["k0": "v\(random.next() % 4)", "k1": "w\(random.next() % 4)"]
    }

    private func uniform(_ low: Double, _ high: Double) -> Double {
        low + (high - low) * Double(random.next() % 10_000) / 10_000
    }

    // MARK: - Operations

    private func join(_ channel: String, state: [String: String], interruptible: Bool = true) {
        intents[channel] = Intent(member: true, state: state, confirmed: false)
        var args = JSONObject([("channel", .string(channel))])
        if !state.isEmpty { args["state"] = stateJSON(state) }
        guard case .ok = perform("join", args, interruptible: interruptible) else { return }
        intents[channel]?.confirmed = true
    }

    private func leave(_ channel: String, interruptible: Bool = true) {
        let before = intents[channel]
        intents[channel] = Intent(member: false, state: [:], confirmed: false)
        var request: JSON?
        let outcome = perform("leave", ["channel": .string(channel)], interruptible: interruptible) { id in request = id }
        switch outcome {
        case .ok:
            intents[channel]?.confirmed = true
        case .refused(let reply) where reply.errorCode == .notInChannel:
            intents[channel]?.confirmed = true
            if let request { pendingLeaves[request.compactString] = nil }
            rosters[channel] = nil
            if sawUnavailable {
                stats.halfDoneLeaves += 1
                note("leave #\(channel): UNAVAILABLE, then NOT_IN_CHANNEL on the retry (the first attempt did change something)")
            } else if before?.member == true, before?.confirmed == true {
                record(ChaosViolation(
                    invariant: "membership", subject: "\(userId) #\(channel) (session \(sessionId ?? "?") on n\(node + 1))",
                    detail: "leave answered NOT_IN_CHANNEL, but the session's join was confirmed and no leave was sent since",
                    users: [userId]))
            }
        default:
            break
        }
    }

    private func setState(_ channel: String, _ state: [String: String]) {
        intents[channel] = Intent(member: true, state: state, confirmed: false)
        let outcome = perform("setState", ["channel": .string(channel), "state": stateJSON(state)], interruptible: true)
        guard case .ok(let reply) = outcome else { return }
        if reply["pending"]?.boolValue == true {
            record(ChaosViolation(
                invariant: "membership", subject: "\(userId) #\(channel) (session \(sessionId ?? "?") on n\(node + 1))",
                detail: "setState answered pending: the broker no longer counts the session as a member, though its join was confirmed",
                users: [userId]))
            intents[channel]?.confirmed = false  // joined again by the next step
            return
        }
        intents[channel]?.confirmed = true
        var merged = stringMap(reply["state"]) ?? [:]
        merged["typing"] = nil
        if merged != state {
            record(ChaosViolation(invariant: "reply", subject: "\(userId) #\(channel)",
                                  detail: "setState answered state \(merged) (typing aside), asked for \(state)", users: [userId]))
        }
    }

    private func typing(_ channel: String) {
        let ttl = (uniform(0.2, 0.6) * 10).rounded() / 10
        _ = perform("setState", ["channel": .string(channel), "state": ["typing": "1"], "ttlSeconds": .number(JSONNumber(ttl))],
                    interruptible: true)
    }

    private func publish(_ channel: String) {
        publishCounter += 1
        let message: JSON = ["from": .string(userId), "n": .int(publishCounter)]
        _ = perform("publish", ["channel": .string(channel), "message": message], interruptible: true)
    }

    private func setCustomStatus(_ value: String?, interruptible: Bool) {
        customStatus = value
        customStatusConfirmed = false
        let outcome = perform("setCustomStatus", ["customStatus": value.map(JSON.string) ?? .null], interruptible: interruptible)
        if case .ok = outcome { customStatusConfirmed = true }
    }

    private func reissue(_ channel: String, interruptible: Bool) {
        guard let intent = intents[channel] else { return }
        if intent.member { join(channel, state: intent.state, interruptible: interruptible) } else { leave(channel, interruptible: interruptible) }
    }

    /// Sends `op` and waits for its reply; retries `UNAVAILABLE` and `RATE_LIMITED` after the
    /// broker's `retryAfterMs` for up to 4 s. `sent` sees each request id.
    private func perform(_ op: String, _ args: JSONObject, interruptible: Bool, sent: (JSON) -> Void = { _ in }) -> Outcome {
        stats.ops[op, default: 0] += 1
        sawUnavailable = false
        let giveUpAt = clock.elapsed + 4
        while true {
            guard let connection, connection.closeInfo == nil else { return .noAnswer }
            let id = connection.send(op, .object(args))
            sent(id)
            if op == "leave", let channel = args["channel"]?.stringValue { pendingLeaves[id.compactString] = channel }
            let reply: Reply
            do {
                reply = try connection.waitForReply(id: id, timeout: Self.requestTimeout)
            } catch {
                stats.noAnswer += 1
                log("\(op) \(args["channel"]?.stringValue ?? ""): no answer (\(error.code))")
                dropConnection("\(op) unanswered")
                return .noAnswer
            }
            if reply.ok {
                log("\(op) \(Self.brief(args)): ok")
                return .ok(reply)
            }
            let code = reply.errorCode
            if code == .unavailable || code == .rateLimited {
                if code == .unavailable { stats.unavailable += 1; sawUnavailable = true }
                log("\(op) \(Self.brief(args)): \(reply.errorCodeText ?? "?")")
                let wait = Double(min(max(reply.retryAfterMs ?? 200, 50), 500)) / 1000
                guard clock.elapsed + wait < giveUpAt, clock.pace(wait, interruptible: interruptible) else { return .unavailable }
                continue
            }
            log("\(op) \(Self.brief(args)): \(reply.errorCodeText ?? "?")")
            if code != .notInChannel {
                record(ChaosViolation(invariant: "errors", subject: "\(userId) \(op) on n\(node + 1)",
                                      detail: "answered \(reply)", users: [userId]))
            }
            return .refused(reply)
        }
    }

    // MARK: - Sessions

    /// Makes sure there is a logged-in connection: resumes the session on a random node, or
    /// logs in afresh (and then joins again every channel it wants). False when that did not
    /// work this time.
    @discardableResult
    func ensureSession(interruptible: Bool = true) -> Bool {
        if let connection, connection.closeInfo == nil { return true }
        if let connection, let info = connection.closeInfo {
            catchUp()
            log("connection to n\(node + 1) ended: \(info)")
            if info.isClusterDataLost { cluster.noteDataLoss() }
            self.connection = nil
        }
        rosters = [:]
        pendingLeaves = [:]
        let target = Int(random.next() % 3)
        let fresh: RollcallConnection
        do {
            fresh = try RollcallConnection.connect(url: cluster.nodeURL(target), subprotocol: "rollcall.v1",
                                                   recordTranscript: true, runtime: runtime, timeout: .seconds(2))
        } catch {
            log("connect to n\(target + 1): \(error.code)")
            clock.pace(0.1, interruptible: interruptible)
            return false
        }
        let reply: Reply
        do {
            reply = try fresh.login(userId: userId, platform: platform, resumeToken: resumeToken, timeout: Self.requestTimeout)
        } catch {
            log("login on n\(target + 1): no answer (\(error.code))")
            fresh.drop()
            return false
        }
        guard reply.ok else {
            log("login on n\(target + 1): \(reply.errorCodeText ?? "?")")
            if reply.errorCode != .unavailable {
                record(ChaosViolation(invariant: "errors", subject: "\(userId) login on n\(target + 1)", detail: "answered \(reply)", users: [userId]))
            }
            fresh.close()
            clock.pace(Double(min(max(reply.retryAfterMs ?? 200, 50), 500)) / 1000, interruptible: interruptible)
            return false
        }
        connection = fresh
        consumed = 0
        node = target
        resumeToken = reply["resumeToken"]?.stringValue
        let newSession = reply["sessionId"]?.stringValue
        if reply["resumed"]?.boolValue == true {
            stats.resumed += 1
            log("resumed \(newSession ?? "?") on n\(target + 1)")
            checkResumedChannels(reply)
        } else {
            stats.freshLogins += 1
            log("logged in on n\(target + 1): new session \(newSession ?? "?")" + (sessionId.map { " (\($0) not resumed)" } ?? ""))
            for channel in intents.keys {
                // The new session is in no channel: join again where the client wants to be.
                if intents[channel]!.member { intents[channel]!.confirmed = false } else { intents[channel]!.confirmed = true }
            }
        }
        sessionId = newSession
        return true
    }

    /// A resumed session is in exactly the channels whose joins (and leaves) were confirmed.
    private func checkResumedChannels(_ reply: Reply) {
        let listed = Set((reply["channels"]?.arrayValue ?? []).compactMap { $0["channel"]?.stringValue })
        for channel in channels {
            guard let intent = intents[channel] else {
                if listed.contains(channel) {
                    record(ChaosViolation(invariant: "resume", subject: "\(userId) #\(channel)",
                                          detail: "the resumed session is in a channel it never joined", users: [userId]))
                }
                continue
            }
            guard intent.confirmed else {
                intents[channel]!.confirmed = false  // re-sent by the next steps either way
                continue
            }
            if intent.member != listed.contains(channel) {
                record(ChaosViolation(
                    invariant: "resume", subject: "\(userId) #\(channel) (session \(sessionId ?? "?"))",
                    detail: intent.member ? "the resumed session is not in the channel, though its join was confirmed"
                                          : "the resumed session is still in the channel, though its leave was confirmed",
                    users: [userId]))
                intents[channel]!.confirmed = false
            }
        }
    }

    /// Ends the connection abruptly (the broker holds the session); the next step resumes it.
    func dropConnection(_ why: String) {
        guard let connection else { return }
        catchUp()
        log("drop: \(why)")
        connection.drop()
        self.connection = nil
        rosters = [:]
        pendingLeaves = [:]
    }

    /// Drops the connection and forgets the session: the next login is a new session in no
    /// channel, and the old one must time out everywhere.
    private func giveUp() {
        stats.givenUp += 1
        dropConnection("give up the session \(sessionId ?? "?")")
        resumeToken = nil
        sessionId = nil
        for channel in intents.keys { intents[channel] = Intent(member: false, state: [:], confirmed: true) }
    }

    // MARK: - Events

    /// Applies every object received on the current connection since the last call.
    func catchUp() {
        guard let connection else { return }
        _ = connection.drainEvents()  // read from the transcript; nothing waits on the queue
        let transcript = connection.transcript
        while consumed < transcript.count {
            let object = transcript[consumed]
            consumed += 1
            apply(object)
        }
    }

    /// Sends a `ping` and applies everything that arrived before its reply; false when the
    /// connection did not answer.
    func barrier() -> Bool {
        guard let connection, connection.closeInfo == nil,
              (try? connection.request("ping", timeout: .seconds(3)))?.ok == true else { return false }
        catchUp()
        return true
    }

    private func apply(_ object: JSONObject) {
        let json = JSON.object(object)
        guard let name = json["event"]?.stringValue else {
            if let channel = pendingLeaves.removeValue(forKey: json["id"]?.compactString ?? ""), json["ok"]?.boolValue == true {
                rosters[channel] = nil
            }
            return
        }
        let event = Event(object)
        if name == "message" { checkMessage(event); return }
        guard name == "presence", let channel = json["channel"]?.stringValue else { return }
        if event.type == "snapshot" {
            var roster = RollcallClient.Roster(channel: channel)
            roster.apply(event)
            rosters[channel] = roster
            return
        }
        guard var roster = rosters[channel] else { return }  // before the snapshot
        var unexpected: [String] = []
        let outcome = roster.apply(event) { change in
            if case .unexpected(let what) = change { unexpected.append(what) }
        }
        rosters[channel] = roster
        let me = userId
        if role == .watcher, case .needsResync(let expected, let received) = outcome {
            var violation = ChaosViolation(
                invariant: "gap", subject: "\(userId) on n\(node + 1) #\(channel)",
                detail: "\(event.type ?? "?") with seq \(received) delivered after seq \(expected - 1), no snapshot between: \(event)",
                users: [userId] + [json["publisher"]?.stringValue].compactMap { $0 })
            if received > expected { violation.missed = (channel, expected...(received - 1)) }
            record(violation)
        }
        for what in unexpected where !what.contains(" \(me),") && !what.hasSuffix(" \(me)") && (role == .watcher || !roster.isStale) {
            record(ChaosViolation(invariant: "roster", subject: "\(userId) on n\(node + 1) #\(channel)",
                                  detail: "an event that does not fit the roster: \(what) (seq \(event["seq"]?.numberValue?.intValue ?? -1))",
                                  users: [userId]))
        }
    }

    private func checkMessage(_ event: Event) {
        guard let channel = event["channel"]?.stringValue, let message = event["message"],
              let from = message["from"]?.stringValue, let number = message["n"]?.numberValue?.intValue else { return }
        let key = "\(channel)|\(from)"
        if checkMessages, let last = lastMessage[key], number <= last {
            record(ChaosViolation(invariant: "messages", subject: "\(userId) on n\(node + 1) #\(channel)",
                                  detail: "message \(number) from \(from) after \(last) (a duplicate or out of order)", users: [userId, from]))
        }
        lastMessage[key] = max(number, lastMessage[key] ?? 0)
    }

    // MARK: - Records

    private func record(_ violation: ChaosViolation) {
        var violation = violation
        violation.at = clock.elapsed
        log("VIOLATION \(violation)")
        violations.append(violation)
    }

    private func note(_ text: String) { log("note: \(text)") }

    private func log(_ text: String) {
        history.append((clock.elapsed, "\(clock.stamp()) \(userId) n\(node + 1): \(text)"))
        if history.count > 2000 { history.removeFirst(500) }
    }

    private static func brief(_ args: JSONObject) -> String {
        JSON.object(args).compactString.prefix(90).description
    }
}
