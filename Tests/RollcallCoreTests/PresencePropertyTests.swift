@testable import RollcallCore
import RollcallClient
import RollcallProtocol
import Testing

/// Seeded random walks over many users, sessions and channels in both modes. At every quiet
/// point, each live presence-enabled session's roster — rebuilt from its snapshot plus every
/// presence event in order — equals `getOnlineUsers` (users and states; a session's own
/// user's state is not compared, since events about a user never go to that user's
/// sessions), and `seq` only grows as each session sees it.
///
/// With snapshots cut at 2 members, each session completes a truncated snapshot with
/// `getOnlineUsers` pages (1 to 3 users) at random later steps, as a real client would,
/// merging them while events keep arriving: pages show the roster as of the last event, so
/// the merged roster stays exact (no user who joined and left between two events is kept),
/// and each page's `seq` is the one the session's roster is at.
@Suite struct PresencePropertyTests {
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func rostersRebuiltFromEventsMatchTheListings(seed: UInt64) throws {
        var simulation = try Simulation(seed: seed)
        try simulation.run(steps: 2500)
        #expect(simulation.problems.isEmpty, "\(simulation.problems.prefix(10))")
        #expect(simulation.stats.intervalEvents > 0)
        #expect(simulation.stats.announceEvents > 0)
        #expect(simulation.stats.resumes > 0)
        #expect(simulation.stats.quietChecks > 20)
    }

    @Test(arguments: [5, 6, 7, 8] as [UInt64])
    func rostersCompletedWithPagesAfterTruncatedSnapshotsMatchTheListings(seed: UInt64) throws {
        var simulation = try Simulation(seed: seed, snapshotMaxMembers: 2)
        try simulation.run(steps: 2500)
        #expect(simulation.problems.isEmpty, "\(simulation.problems.prefix(10))")
        #expect(simulation.stats.intervalEvents > 0)
        #expect(simulation.stats.pagesMerged > 50)
        #expect(simulation.stats.pagesDuringPendingChanges > 10)
        #expect(simulation.stats.quietChecks > 20)
    }
}

/// One simulated session as its client sees it.
private final class SimulatedSession {
    var client: HarnessClient
    var joined: [String: (presence: Bool, messages: Bool)] = [:]
    var rosters: [String: Roster] = [:]
    init(client: HarnessClient) { self.client = client }
    var userId: String { client.userId }
}

private struct Simulation {
    struct Stats {
        var intervalEvents = 0
        var announceEvents = 0
        var resumes = 0
        var quietChecks = 0
        var pagesMerged = 0
        /// Pages read while the channel had changes waiting for its next interval event.
        var pagesDuringPendingChanges = 0
    }

    static let channels: [(name: String, type: String)] = [("a", "message"), ("b", "message"), ("a", "stream"), ("c", "message")]
    static let users = (0..<12).map { "u" + paddedNumber($0) }
    static let stateKeys = ["k1", "k2", "k3"]
    static let stateValues = ["x", "y", ""]

    let harness: PresenceHarness
    var random: SplitMix64
    var live: [SimulatedSession] = []
    var held: [SimulatedSession] = []
    let observer: HarnessClient
    var problems: [String] = []
    var stats = Stats()
    private let router: EventRouter

    init(seed: UInt64, snapshotMaxMembers: Int = 1000) throws {
        harness = PresenceHarness {
            $0.presence.maxInstantEvents = 4
            $0.presence.hysteresis = 2
            $0.presence.intervalSeconds = 1
            $0.presence.timeoutSeconds = 1.5
            $0.presence.snapshotMaxMembers = snapshotMaxMembers
            $0.state.maxPendingChannels = 2
        }
        harness.broker.presence.memberChunkCapacity = 4
        random = SplitMix64(seed: seed)
        router = EventRouter()
        observer = try harness.login("observer")
        let router = self.router
        harness.onEvent = { connection, event in router.route(event, to: connection) }
    }

    static func key(_ channel: (name: String, type: String)) -> String { channel.type + "/" + channel.name }

    static func arguments(_ channel: (name: String, type: String)) -> [(String, JSON)] {
        [("channel", .string(channel.name)), ("channelType", .string(channel.type))]
    }

    mutating func run(steps: Int) throws {
        for step in 1...steps {
            try randomStep()
            forgetClosedSessions()
            if step % 50 == 0 { try quietCheck() }
        }
        try quietCheck()
        problems += router.problems
        stats.intervalEvents = router.intervalEvents
        stats.announceEvents = router.announceEvents
        // Everyone goes: nothing is left behind.
        for session in live { session.client.close() }
        harness.advance(seconds: 10)
        harness.advance(seconds: 10)
        if harness.broker.presence.channelCount != 0 { problems.append("channels left: \(harness.broker.presence.channelCount)") }
        if !harness.broker.presence.userChannels.isEmpty { problems.append("user index not empty") }
    }

    private mutating func randomStep() throws {
        let roll = Int.random(in: 0..<100, using: &random)
        switch roll {
        case 0..<10: try loginNewSession()
        case 10..<35: join()
        case 35..<45: leave()
        case 45..<60: setState()
        case 60..<67: removeState()
        case 67..<75: publish()
        case 75..<79: closeSession()
        case 79..<83: dropSession()
        case 83..<87: try resumeSession()
        case 87..<93: fetchPage()
        default:
            harness.advance(seconds: Double(Int.random(in: 0...700, using: &random)) / 1000)
        }
    }

    private mutating func pickLive() -> SimulatedSession? {
        live.isEmpty ? nil : live[Int.random(in: 0..<live.count, using: &random)]
    }

    private mutating func pickChannel() -> (name: String, type: String) {
        Self.channels[Int.random(in: 0..<Self.channels.count, using: &random)]
    }

    private mutating func randomState() -> JSON {
        var members: [(key: String, value: JSON)] = []
        for key in Self.stateKeys where Int.random(in: 0..<3, using: &random) == 0 {
            members.append((key, .string(Self.stateValues[Int.random(in: 0..<Self.stateValues.count, using: &random)])))
        }
        return .object(JSONObject(members))
    }

    private mutating func loginNewSession() throws {
        let user = Self.users[Int.random(in: 0..<Self.users.count, using: &random)]
        let sessions = (live + held).filter { $0.userId == user }.count
        guard sessions < 3 else { return }
        let session = SimulatedSession(client: try harness.login(user))
        live.append(session)
        router.sessions[session.client.connection] = session
    }

    private mutating func join() {
        guard let session = pickLive() else { return }
        let channel = pickChannel()
        let key = Self.key(channel)
        let flags = (presence: Int.random(in: 0..<7, using: &random) != 0, messages: Int.random(in: 0..<5, using: &random) != 0)
        var arguments = Self.arguments(channel)
        arguments.append(("presence", .bool(flags.presence)))
        arguments.append(("messages", .bool(flags.messages)))
        if Bool.random(using: &random) { arguments.append(("state", randomState())) }
        let previous = session.joined[key]
        session.joined[key] = flags
        if !flags.presence { session.rosters[key] = nil }
        let reply = session.client.send("join", arguments)
        if reply["ok"] != true {
            session.joined[key] = previous
            problems.append("join failed: \(reply.compactString)")
        }
    }

    private mutating func leave() {
        guard let session = pickLive() else { return }
        let channel = pickChannel()
        let key = Self.key(channel)
        let reply = session.client.send("leave", Self.arguments(channel))
        let expectedOK = session.joined[key] != nil
        if (reply["ok"] == true) != expectedOK { problems.append("leave of \(key): \(reply.compactString)") }
        session.joined[key] = nil
        session.rosters[key] = nil
    }

    private mutating func setState() {
        guard let session = pickLive() else { return }
        let channel = pickChannel()
        var arguments = Self.arguments(channel) + [("state", randomState())]
        // A third of the keys are set with a TTL (PROTOCOL 1.1), so expiries interleave with
        // everything else, in both modes and before joins (pending states).
        if Int.random(in: 0..<3, using: &random) == 0 {
            arguments.append(("ttlSeconds", .number(JSONNumber(Double(Int.random(in: 1...20, using: &random)) / 10))))
        }
        let reply = session.client.send("setState", arguments)
        if reply["ok"] != true, reply["error"]?.string("code") != "TOO_MANY_PENDING_STATES" {
            problems.append("setState failed: \(reply.compactString)")
        }
    }

    private mutating func removeState() {
        guard let session = pickLive() else { return }
        let channel = pickChannel()
        let key = Self.stateKeys[Int.random(in: 0..<Self.stateKeys.count, using: &random)]
        let reply = session.client.send("removeState", Self.arguments(channel) + [("keys", [.string(key)])])
        if reply["ok"] != true { problems.append("removeState failed: \(reply.compactString)") }
    }

    private mutating func publish() {
        guard let session = pickLive() else { return }
        let channel = pickChannel()
        let reply = session.client.send("publish", Self.arguments(channel) + [("message", ["n": .int(Int.random(in: 0..<1000, using: &random))])])
        if reply["ok"] != true, reply["error"]?.string("code") != "NOT_IN_CHANNEL" {
            problems.append("publish failed: \(reply.compactString)")
        }
    }

    private mutating func closeSession() {
        guard let session = pickLive() else { return }
        live.removeAll { $0 === session }
        router.sessions[session.client.connection] = nil
        session.client.close()
    }

    private mutating func dropSession() {
        guard let session = pickLive() else { return }
        live.removeAll { $0 === session }
        router.sessions[session.client.connection] = nil
        session.client.drop()
        session.rosters = [:]
        held.append(session)
    }

    private mutating func resumeSession() throws {
        guard !held.isEmpty else { return }
        let session = held.remove(at: Int.random(in: 0..<held.count, using: &random))
        let old = session.client
        let fresh = try harness.login(old.userId, ["resumeToken": .string(old.resumeToken)])
        let result = fresh.lastLoginResult ?? .null
        let joinedBefore = session.joined
        if result["resumed"] == true {
            stats.resumes += 1
            let listed = Set((result["channels"]?.arrayValue ?? []).map { ($0.string("channelType") ?? "") + "/" + ($0.string("channel") ?? "") })
            if listed != Set(joinedBefore.keys) { problems.append("resume listed \(listed), joined \(joinedBefore.keys.sorted())") }
        } else {
            session.joined = [:]  // the hold had expired: a brand-new session
        }
        session.client = fresh
        // The snapshots were routed before the session was known under its new connection.
        for event in harness.takeEvents(fresh.connection) { router.apply(event, to: session) }
        router.sessions[fresh.connection] = session
        live.append(session)
    }

    /// One session reads the next `getOnlineUsers` page its truncated snapshot left and merges
    /// it, as ``RollcallClient/PresenceRoster/merge(page:nextPage:)`` tells a client to.
    private mutating func fetchPage() {
        let waiting = live.flatMap { session in session.rosters.compactMap { $0.value.pendingPage == nil ? nil : (session, $0.key) } }
        guard !waiting.isEmpty else { return }
        let (session, key) = waiting[Int.random(in: 0..<waiting.count, using: &random)]
        readPage(session, key, pageSize: Int.random(in: 1...3, using: &random))
    }

    private mutating func readPage(_ session: SimulatedSession, _ key: String, pageSize: Int) {
        guard let roster = session.rosters[key], let page = roster.pendingPage,
              let channel = Self.channels.first(where: { Self.key($0) == key }) else { return }
        let pending = harness.broker.presence.channels[ChannelKey(type: ChannelType(rawValue: channel.type)!, name: Name(unchecked: channel.name))]?
            .pending.isEmpty == false
        let reply = session.client.send("getOnlineUsers", Self.arguments(channel) + [
            ("includeState", true), ("pageSize", .int(pageSize)), ("page", .string(page)),
        ])
        guard reply["ok"] == true, let result = reply["result"] else {
            problems.append("getOnlineUsers page failed: \(reply.compactString)")
            return
        }
        // Replies and events reach a session in order: the page is as of the session's seq
        // (or later only by events about its own user, which it does not receive).
        if let pageSeq = result.int("seq"), let seq = roster.seq, pageSeq < seq {
            problems.append("\(session.userId) read a page of \(key) at seq \(pageSeq) after seq \(seq)")
        }
        stats.pagesMerged += 1
        if pending { stats.pagesDuringPendingChanges += 1 }
        let nextPage = result["nextPage"]?.stringValue
        session.rosters[key]!.merge(page: result["users"]?.arrayValue ?? [], nextPage: nextPage)
    }

    private mutating func forgetClosedSessions() {
        for session in live where harness.closes[session.client.connection] != nil {
            router.sessions[session.client.connection] = nil
        }
        live.removeAll { harness.closes[$0.client.connection] != nil }
    }

    /// Lets every pending interval flush run, then compares rosters with the listings.
    private mutating func quietCheck() throws {
        // Clients finish reading the pages their truncated snapshots left.
        for session in live {
            for key in session.rosters.keys.sorted() {
                while session.rosters[key]?.pendingPage != nil { readPage(session, key, pageSize: 3) }
            }
        }
        var rounds = 0
        repeat {
            harness.advance(seconds: 1.001)
            rounds += 1
        } while harness.broker.presence.nextDeadline != nil && rounds < 20
        forgetClosedSessions()
        stats.quietChecks += 1
        var listings: [String: [String: [String: String]]] = [:]
        var channelsOfUser: [String: Set<String>] = [:]
        for channel in Self.channels {
            let key = Self.key(channel)
            let result = try observer.ok("getOnlineUsers", Self.arguments(channel) + [("includeState", true), ("pageSize", 1000)])
            var users: [String: [String: String]] = [:]
            for user in result["users"]?.arrayValue ?? [] {
                let id = user.string("userId") ?? "?"
                users[id] = user["state"]?.stringMap ?? [:]
                channelsOfUser[id, default: []].insert(key)
            }
            if result.int("totalOccupancy") != users.count { problems.append("totalOccupancy differs from the list in \(key)") }
            listings[key] = users
        }
        for session in live {
            for (key, flags) in session.joined where flags.presence {
                guard let roster = session.rosters[key] else {
                    problems.append("\(session.userId) has no roster for \(key)")
                    continue
                }
                let truth = listings[key] ?? [:]
                if Set(roster.statesByUser.keys) != Set(truth.keys) {
                    problems.append("\(session.userId) sees \(roster.statesByUser.keys.sorted()) in \(key), listing \(truth.keys.sorted())")
                    continue
                }
                for (user, state) in truth where user != session.userId && roster.statesByUser[user] != state {
                    problems.append("\(session.userId) sees \(user) in \(key) with \(roster.statesByUser[user] ?? [:]), listing \(state)")
                }
            }
        }
        for user in Self.users {
            let listed = try observer.ok("getUserChannels", [("userId", .string(user))])
            let channels = Set((listed["channels"]?.arrayValue ?? []).map { ($0.string("channelType") ?? "") + "/" + ($0.string("channel") ?? "") })
            if channels != channelsOfUser[user] ?? [] { problems.append("getUserChannels(\(user)) = \(channels.sorted())") }
        }
    }
}

/// Delivers each event to the simulated session of its connection and checks who gets what.
private final class EventRouter {
    var sessions: [ConnectionID: SimulatedSession] = [:]
    var problems: [String] = []
    var intervalEvents = 0
    var announceEvents = 0
    /// Per channel: who each seq was about ("*" for interval events), as seen by any recipient.
    private var log: [String: [Int: String]] = [:]

    func route(_ event: JSON, to connection: ConnectionID) {
        guard let session = sessions[connection] else { return }  // a login's own events: handled by the caller
        apply(event, to: session)
        _ = session.client.harness.takeEvents(connection)
    }

    func apply(_ event: JSON, to session: SimulatedSession) {
        let key = (event.string("channelType") ?? "") + "/" + (event.string("channel") ?? "")
        switch event.string("event") {
        case "presence":
            guard session.joined[key]?.presence == true else {
                problems.append("presence event to \(session.userId) without presence in \(key): \(event.compactString)")
                return
            }
            let type = event.string("type")
            if type == "interval" { intervalEvents += 1 } else if type != "snapshot" { announceEvents += 1 }
            let seq = event.int("seq") ?? -1
            if type == "snapshot" {
                // A channel deleted and created again starts its seq over.
                if let highest = log[key]?.keys.max(), seq < highest { log[key] = [:] }
                session.rosters[key] = Roster(of: event)
            } else {
                log[key, default: [:]][seq] = type == "interval" ? "*" : (event.string("publisher") ?? "?")
            }
            guard let last = session.rosters[key]?.seq ?? (type == "snapshot" ? seq : nil) else {
                problems.append("\(type ?? "?") to \(session.userId) before its snapshot in \(key)")
                return
            }
            // Every seq a session skipped was an event about its own user.
            if type != "snapshot", seq > last + 1 {
                for missed in (last + 1)..<seq {
                    if let about = log[key]?[missed], about != session.userId {
                        problems.append("\(session.userId) missed seq \(missed) (about \(about)) in \(key)")
                    }
                }
            }
            // While pages are still to read, an event may be about a user on one of them:
            // the client skips it, and the page (read later, so as of a later seq) has it right.
            let paging = type != "snapshot" && session.rosters[key]?.pendingPage != nil
            problems += session.rosters[key]!.applyChecked(event, viewer: session.userId)
                .filter { !(paging && $0.hasSuffix("not a member")) }
        case "message":
            if session.joined[key]?.messages != true {
                problems.append("message to \(session.userId) without messages in \(key)")
            }
            if event.string("publisher") == nil { problems.append("message without publisher") }
        default:
            break  // user status events are not this suite's business
        }
    }
}
