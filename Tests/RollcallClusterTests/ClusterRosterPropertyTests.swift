import Foundation
import RollcallClient
import RollcallCore
import RollcallProtocol
import Testing

/// The roster invariant (PROTOCOL §4) with sessions spread over 3 nodes: a client that applies
/// its snapshot and then every presence event holds exactly what `getOnlineUsers` returns once
/// the channel is quiet — whichever node each member is on (its own user's state aside:
/// events about a user never go to that user's sessions).
@Suite("Cluster: roster invariant over 3 nodes", .serialized)
struct ClusterRosterPropertyTests {
    @Test("random joins, leaves and state changes in announce mode", arguments: [UInt64(11), 12, 13, 14])
    func announceMode(seed: UInt64) throws {
        var configuration = Configuration()
        configuration.presence.maxInstantEvents = 50
        try run(seed: seed, configuration: configuration, steps: 500)
    }

    @Test("random churn across the interval-mode threshold", arguments: [UInt64(21), 22, 23, 24])
    func intervalMode(seed: UInt64) throws {
        var configuration = Configuration()
        configuration.presence.maxInstantEvents = 3
        configuration.presence.hysteresis = 1
        configuration.presence.intervalSeconds = 0.2
        try run(seed: seed, configuration: configuration, steps: 500)
    }

    /// Snapshots cut at 2 members: clients complete them with `getOnlineUsers` pages (2 users
    /// each) at random later steps, from whichever node they are on, while events keep coming.
    /// A page is the roster as of the channel's last event; it may be read before that event
    /// reached the client's node, so edits of events up to the page's `seq` may find the page's
    /// users already there (or gone): only the final rosters are compared.
    @Test("interval mode with truncated snapshots completed by getOnlineUsers pages", arguments: [UInt64(31), 32, 33])
    func truncatedSnapshotsAndPages(seed: UInt64) throws {
        var configuration = Configuration()
        configuration.presence.maxInstantEvents = 3
        configuration.presence.hysteresis = 1
        configuration.presence.intervalSeconds = 0.2
        configuration.presence.snapshotMaxMembers = 2
        try run(seed: seed, configuration: configuration, steps: 500, pages: true)
    }

    private func run(seed: UInt64, configuration base: Configuration, steps: Int, pages: Bool = false) throws {
        var configuration = base
        // The final check polls getOnlineUsers until it holds; the rate limit is not under test.
        configuration.limits.requestsPerSecond = 1_000_000
        configuration.limits.requestBurst = 1_000_000
        configuration.presence.timeoutSeconds = 0.3
        let bed = try ClusterBed(nodes: 3, configuration: configuration, prefix: "prop\(seed):")
        var random = SeededRandom(seed: seed)
        let channels = ["lobby", "room:a"]
        // Nine sessions of seven users (two users have a session on two nodes each).
        let users = ["ann", "bob", "cy", "dee", "eve", "fay", "gus", "ann", "bob"]
        var clients = try users.enumerated().map { index, user in try bed.login(user, on: index % 3) }
        var resumes = 0
        var drops = 0
        var joined: [[String]] = Array(repeating: [], count: clients.count)
        var rosters: [[String: Roster]] = Array(repeating: [:], count: clients.count)
        var applied = Array(repeating: 0, count: clients.count)
        /// The highest page `seq` merged per client and channel.
        var pageSeqs: [[String: Int]] = Array(repeating: [:], count: clients.count)
        var pagesMerged = 0
        var problems: [String] = []

        /// Applies every event a client received since last time to its rosters.
        func drain(_ index: Int) {
            let client = clients[index]
            while applied[index] < client.events.count {
                let event = client.events[applied[index]]
                applied[index] += 1
                guard event.string("event") == "presence", let channel = event.string("channel"),
                      joined[index].contains(channel) else { continue }
                if event.string("type") == "snapshot" { rosters[index][channel] = Roster(channel: channel) }
                guard var roster = rosters[index][channel] else {
                    problems.append("seed \(seed): \(users[index])@n\(client.node + 1) got \(event.string("type") ?? "?") before a snapshot")
                    continue
                }
                let paging = roster.pendingPage != nil || (event["seq"]?.numberValue?.intValue ?? 0) <= (pageSeqs[index][channel] ?? -1)
                let outcome = roster.apply(Event(event.objectValue ?? JSONObject())) { change in
                    if case .unexpected(let what) = change, !what.hasPrefix("interval join of \(users[index])"),
                       !(paging && (what.hasSuffix("not a member") || what.hasSuffix("already a member"))) {
                        problems.append("seed \(seed): \(users[index])@n\(client.node + 1) in \(channel): \(what)")
                    }
                }
                // A gap is normal where the viewer's own user changed (no event about oneself);
                // the final comparison is the invariant.
                _ = outcome
                rosters[index][channel] = roster
            }
        }

        /// Reads and merges the next page a truncated snapshot left, if any.
        func readPage(_ index: Int, _ channel: String) throws {
            drain(index)
            guard let page = rosters[index][channel]?.pendingPage else { return }
            let reply = try bed.request(clients[index], "getOnlineUsers", [
                "channel": .string(channel), "includeState": true, "pageSize": 2, "page": .string(page),
            ])
            guard reply["ok"]?.boolValue == true, let result = reply["result"] else {
                problems.append("seed \(seed): page: \(reply.compactString)")
                return
            }
            pageSeqs[index][channel] = max(pageSeqs[index][channel] ?? 0, result["seq"]?.numberValue?.intValue ?? 0)
            rosters[index][channel]?.merge(page: result["users"]?.arrayValue ?? [], nextPage: result["nextPage"]?.stringValue)
            pagesMerged += 1
        }

        for _ in 0..<steps {
            let index = Int.random(in: 0..<clients.count, using: &random)
            let client = clients[index]
            let channel = channels.randomElement(using: &random)!
            let roll = Int.random(in: 0..<100, using: &random)
            drain(index)
            if pages, roll % 5 == 0, rosters[index][channel]?.pendingPage != nil {
                try readPage(index, channel)
                continue
            }
            if roll >= 97 {
                // The connection drops for good: the session times out (`timeout` events) while
                // the user starts over with a new session on another node.
                bed.disconnect(client, abnormally: true)
                clients[index] = try bed.login(users[index], on: (client.node + 2) % 3)
                applied[index] = 0
                rosters[index] = [:]
                joined[index] = []
                drops += 1
            } else if roll >= 92 {
                // The connection drops; the session resumes on another node, silently.
                let token = client.resumeToken
                bed.disconnect(client, abnormally: true)
                // Its node records the hold before the client is back (a live session does not resume).
                try bed.pump(until: { !bed.brokers[client.node].awaitsStore }, what: "the hold recorded")
                let moved = try bed.login(users[index], on: (client.node + 1) % 3, ["resumeToken": .string(token)])
                #expect(moved.resumed, "resume of \(users[index]) on n\(moved.node + 1)")
                clients[index] = moved
                applied[index] = 0
                rosters[index] = [:]
                resumes += 1
            } else if !joined[index].contains(channel) || roll < 25 {
                var arguments: [String: JSON] = ["channel": .string(channel)]
                if roll % 2 == 0 { arguments["state"] = ["mood": .string("m\(roll)")] }
                let reply = try bed.request(client, "join", arguments)
                #expect(reply["ok"]?.boolValue == true, "join: \(reply.compactString)")
                if !joined[index].contains(channel) { joined[index].append(channel) }
            } else if roll < 50 {
                let reply = try bed.request(client, "leave", ["channel": .string(channel)])
                #expect(reply["ok"]?.boolValue == true, "leave: \(reply.compactString)")
                drain(index)
                joined[index].removeAll { $0 == channel }
                rosters[index][channel] = nil
            } else if roll < 85 {
                var arguments: [String: JSON] = [
                    "channel": .string(channel), "state": [(roll % 3 == 0 ? "mood" : "x"): .string("v\(roll)")],
                ]
                // Some keys expire by themselves (typing indicators), in the middle of the walk.
                if roll % 4 == 0 { arguments["ttlSeconds"] = .number(JSONNumber(0.1 + Double(roll % 3) / 10)) }
                let reply = try bed.request(client, "setState", arguments)
                #expect(reply["ok"]?.boolValue == true, "setState: \(reply.compactString)")
            } else {
                let reply = try bed.request(client, "removeState", ["channel": .string(channel), "keys": ["mood"]])
                #expect(reply["ok"]?.boolValue == true, "removeState: \(reply.compactString)")
            }
        }

        // Quiet: every joined client's roster equals getOnlineUsers, once pending interval
        // events are out (wait on the condition, with a deadline).
        func listing(_ channel: String, via client: ClusterBed.Client) throws -> [String: [String: String]] {
            let reply = try bed.request(client, "getOnlineUsers", ["channel": .string(channel), "includeState": true, "pageSize": 1000])
            var users: [String: [String: String]] = [:]
            if reply["ok"]?.boolValue != true { users["<error>"] = ["reply": reply.compactString] }
            for entry in reply["result"]?["users"]?.arrayValue ?? [] {
                var state: [String: String] = [:]
                for member in entry["state"]?.objectValue?.members ?? [] { state[member.key] = member.value.stringValue }
                users[entry.string("userId") ?? "?"] = state
            }
            return users
        }
        func mismatches() throws -> [String] {
            var found: [String] = []
            for index in clients.indices {
                for channel in channels { while rosters[index][channel]?.pendingPage != nil { try readPage(index, channel) } }
            }
            for channel in channels {
                let truth = try listing(channel, via: clients[0])
                for index in clients.indices where joined[index].contains(channel) {
                    drain(index)
                    var held: [String: [String: String]] = [:]
                    for member in rosters[index][channel]?.sortedMembers ?? [] { held[member.userId] = member.state }
                    // Events about a user never go to that user's sessions: its own state is
                    // not compared, only its membership (as in the single-node property test).
                    var expected = truth
                    if expected[users[index]] != nil { expected[users[index]] = [:] }
                    if held[users[index]] != nil { held[users[index]] = [:] }
                    if held != expected { found.append("\(users[index])@n\(clients[index].node + 1) in \(channel): \(held) != \(truth)") }
                }
            }
            return found
        }
        var last: [String] = []
        try bed.pump(until: {
            last = (try? mismatches()) ?? ["listing failed"]
            return last.isEmpty
        }, timeout: 15, what: "every roster to equal getOnlineUsers (seed \(seed)): \(last.joined(separator: "; "))")
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        #expect(resumes > 0)
        #expect(drops > 0)
        if pages { #expect(pagesMerged > 20) }
    }
}

/// A small deterministic generator (SplitMix64), so a failing seed replays.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
