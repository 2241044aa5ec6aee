import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import RollcallTestSupport
import Testing

/// Issue 30 item 4, "a join into a 1000-member channel must not rebuild the snapshot in Redis
/// every time": a node keeps the roster as of the channel's last event that Redis last built
/// for it, keyed on `seq` and the channel's roster version (`rv`); a join or a snapshot read at
/// the same pair gets the joiner's own entry alone from Redis and copies the roster. Every
/// change to that roster that steps no `seq` bumps the version (docs/cluster.md, "One roster
/// per node per seq"). Each test compares the copy with what a fresh read gives: a join on a
/// node whose copy was dropped.
@Suite("Cluster: one roster per node per seq")
struct ClusterJoinRosterCacheTests {
    static let room = ChannelKey(type: .message, name: Name(unchecked: "room"))

    /// How node `node`'s snapshot scripts answered: built the roster, or found the node's copy current.
    final class RosterAnswers {
        var built = 0
        var held = 0
        /// Joins that followed a read in flight and built none.
        var followed = 0
    }

    private func watch(_ bed: ClusterBed, node: Int) -> RosterAnswers {
        let answers = RosterAnswers()
        bed.afterStoreReply = { index, commands, result in
            guard index == node, case .success(let replies) = result else { return }
            for (command, reply) in zip(commands, replies) {
                guard case .script(let script, _) = command else { continue }
                switch script.name {
                case "presence.join":
                    let decoded = JoinScriptReply(reply)
                    guard decoded.outcome == .ok, decoded.rosterVersion != nil else { continue }
                    if decoded.rosterHeld { answers.held += 1 } else if decoded.rosterFollowed { answers.followed += 1 } else { answers.built += 1 }
                case "presence.snapshot":
                    if SnapshotScriptReply(reply).rosterHeld { answers.held += 1 } else { answers.built += 1 }
                default:
                    continue
                }
            }
        }
        return answers
    }

    private func presence(_ bed: ClusterBed, _ node: Int) throws -> ClusterPresence {
        try #require(bed.brokers[node].engines.presence as? ClusterPresence)
    }

    /// The channel's hash key in Redis.
    private func base(_ bed: ClusterBed) throws -> String {
        try presence(bed, 0).keys.channel(Self.room).base
    }

    /// The channel's `seq` in Redis (0: none).
    private func seq(_ bed: ClusterBed) throws -> Int {
        let reply = try bed.run([.command(["HGET", base(bed), "seq"].map { Array($0.utf8) })], on: 0)
        return Int(reply.first?.integer ?? 0)
    }

    /// Runs `command` in Redis through node 0's link, behind every broker's back.
    private func eval(_ bed: ClusterBed, _ command: StoreCommand) throws {
        let reply = try bed.run([command], on: 0).first ?? .null
        if case .error(let message) = reply { throw TestSupportError("script failed: \(message)") }
    }

    /// The channel's interval event, now (its due time moved to the past, then the flush
    /// script), instead of waiting for a node's timer.
    private func flushNow(_ bed: ClusterBed) throws {
        let presence = try presence(bed, 0)
        let channel = presence.channelArguments(Self.room, presence.keys.channel(Self.room), intervalHead: false)
        _ = try bed.run([.command(["HSET", channel.base, "due", "1"].map { Array($0.utf8) })], on: 0)
        try eval(bed, PresenceScripts.flush(channel))
    }

    /// The snapshot `client` got for the room (the last one), as user id → entry.
    private func snapshot(of client: ClusterBed.Client) throws -> (seq: Int, occupancy: Int, entries: [String: JSON]) {
        let event = try #require(client.events.last { $0.string("type") == "snapshot" }, "\(client.events)")
        var entries: [String: JSON] = [:]
        for entry in event["snapshot"]?.arrayValue ?? [] { entries[entry.string("userId") ?? ""] = entry }
        return (event["seq"]?.numberValue?.intValue ?? -1, event["occupancy"]?.numberValue?.intValue ?? -1, entries)
    }

    /// `user` joins the room on `node` with `state`, and its snapshot.
    private func join(_ bed: ClusterBed, _ user: String, on node: Int, state: [String: String] = [:],
                      _ extra: [String: JSON] = [:]) throws -> (client: ClusterBed.Client, seq: Int, occupancy: Int, entries: [String: JSON]) {
        let client = try bed.login(user, on: node, extra)
        var arguments: [String: JSON] = ["channel": .string("room")]
        if !state.isEmpty { arguments["state"] = .object(JSONObject(state.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })) }
        let reply = try bed.request(client, "join", arguments)
        guard reply["ok"]?.boolValue == true else { throw TestSupportError("\(user)'s join: \(reply.compactString)") }
        let shown = try snapshot(of: client)
        return (client, shown.seq, shown.occupancy, shown.entries)
    }

    /// A join's snapshot against a fresh read: a join on node `node` after its copy was dropped,
    /// each without its own user's entry.
    private func expectFresh(_ bed: ClusterBed, _ joined: (client: ClusterBed.Client, seq: Int, occupancy: Int, entries: [String: JSON]),
                             user: String, reader: String, on node: Int, _ extra: [String: JSON] = [:],
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        try presence(bed, node).local[Self.room]?.roster = nil
        let fresh = try join(bed, reader, on: node, extra)
        #expect(fresh.seq == joined.seq, "the same seq", sourceLocation: sourceLocation)
        #expect(fresh.occupancy == joined.occupancy, "the same occupancy", sourceLocation: sourceLocation)
        var copied = joined.entries, read = fresh.entries
        copied[user] = nil
        read[reader] = nil
        #expect(copied == read, "copied \(copied) against read \(read)", sourceLocation: sourceLocation)
    }

    /// Interval mode from the third member on (no timer flushes within a test: intervalSeconds 60).
    private func intervalConfiguration() -> Configuration {
        var configuration = Configuration()
        configuration.presence.maxInstantEvents = 2
        configuration.presence.hysteresis = 0
        configuration.presence.intervalSeconds = 60
        return configuration
    }

    /// Members m0…m3 on node 1 with states, in interval mode, all of them in its last event.
    private func filledRoom(_ bed: ClusterBed) throws -> [ClusterBed.Client] {
        var members: [ClusterBed.Client] = []
        for index in 0..<4 {
            members.append(try join(bed, "m\(index)", on: 1, state: ["n": "\(index)"]).client)
        }
        try flushNow(bed)
        #expect(try seq(bed) == 3, "two announced joins and one interval event")
        return members
    }

    @Test("a second join at the same seq copies the node's roster, the joiner's own entry spliced in, and equals a fresh read")
    func secondJoinCopies() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rostercopy:")
        _ = try filledRoom(bed)
        let answers = watch(bed, node: 0)
        let first = try join(bed, "a", on: 0, state: ["k": "a"])
        #expect((answers.built, answers.held) == (1, 0))
        let second = try join(bed, "b", on: 0, state: ["k": "b"])
        #expect((answers.built, answers.held) == (1, 1), "the second join at seq 3 built no roster in Redis")
        #expect(first.seq == 3 && second.seq == 3)
        #expect(Set(second.entries.keys) == ["m0", "m1", "m2", "m3", "b"], "a joined since the last event: not shown; \(second.entries)")
        #expect(second.entries["b"]?["state"]?["k"]?.stringValue == "b", "the joiner's own entry, as it is now")
        #expect(second.entries["m2"]?["state"]?["n"]?.stringValue == "2")
        #expect(second.occupancy == 5)
        try expectFresh(bed, second, user: "b", reader: "fresh", on: 0)
    }

    @Test("a silent removal (leave kind '-', no seq step) bumps the version: the next join builds the roster again")
    func silentRemovalRebuilds() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rostersilent:")
        let members = try filledRoom(bed)
        let answers = watch(bed, node: 0)
        _ = try join(bed, "a", on: 0)
        let seqBefore = try seq(bed)
        let leave = try presence(bed, 1).leaveCommands(sessionId: members[1].sessionId, user: Name(unchecked: "m1"), channels: [Self.room], kind: nil)
        try eval(bed, leave[0])
        #expect(try seq(bed) == seqBefore, "no seq step")
        let after = try join(bed, "b", on: 0)
        #expect((answers.built, answers.held) == (2, 0), "the join after the removal built the roster")
        #expect(after.entries["m1"] == nil, "m1 is gone: \(after.entries)")
        try expectFresh(bed, after, user: "b", reader: "fresh", on: 0)
    }

    @Test("interval mode across a flush: joins before it copy the roster of the last event, the first join after it reads the new one")
    func intervalAcrossAFlush() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rosterflush:")
        _ = try filledRoom(bed)
        let answers = watch(bed, node: 0)
        _ = try join(bed, "a", on: 0, state: ["k": "a"])
        let before = try join(bed, "b", on: 0)
        #expect(before.entries["a"] == nil && before.seq == 3)
        #expect((answers.built, answers.held) == (1, 1))
        try flushNow(bed)
        try bed.pump(until: { (try? self.presence(bed, 0).local[Self.room]?.delivered) == 4 }, what: "node 0 delivered the interval event")
        let after = try join(bed, "c", on: 0)
        #expect((answers.built, answers.held) == (2, 1), "the flush stepped seq: built again")
        #expect(after.seq == 4 && after.entries["a"]?["state"]?["k"]?.stringValue == "a" && after.entries["b"] != nil, "\(after.entries)")
        try expectFresh(bed, after, user: "c", reader: "fresh", on: 0)
    }

    @Test("changes made through another node: a state change waits for the interval (the copy still holds, as a fresh read shows), a leave and its flush are read again")
    func changesThroughAnotherNode() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rosterother:")
        let members = try filledRoom(bed)
        let answers = watch(bed, node: 0)
        _ = try join(bed, "a", on: 0)
        #expect(try bed.request(members[2], "setState", ["channel": .string("room"), "state": .object(["n": .string("changed")])])["ok"]?.boolValue == true)
        let during = try join(bed, "b", on: 0)
        #expect((answers.built, answers.held) == (1, 1))
        #expect(during.entries["m2"]?["state"]?["n"]?.stringValue == "2", "the state as of seq 3: \(during.entries)")
        try expectFresh(bed, during, user: "b", reader: "fresh1", on: 0)
        #expect(try bed.request(members[0], "leave", ["channel": .string("room")])["ok"]?.boolValue == true)
        try flushNow(bed)
        try bed.pump(until: { (try? self.presence(bed, 0).local[Self.room]?.delivered) == 4 }, what: "node 0 delivered the interval event")
        answers.built = 0
        answers.held = 0
        let after = try join(bed, "c", on: 0)
        #expect((answers.built, answers.held) == (1, 0))
        #expect(after.entries["m0"] == nil && after.entries["m2"]?["state"]?["n"]?.stringValue == "changed", "\(after.entries)")
        try expectFresh(bed, after, user: "c", reader: "fresh2", on: 0)
    }

    @Test("a TTL expiry is a state change: in interval mode it waits for the flush (the copy holds), and the flush's seq step reads the roster again")
    func ttlExpiry() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rosterttl:")
        _ = try filledRoom(bed)
        let typist = try bed.login("typist", on: 1)
        #expect(try bed.request(typist, "join", ["channel": .string("room"), "state": .object(["typing": .string("1")]),
                                                 "ttlSeconds": .number(JSONNumber(0.2))])["ok"]?.boolValue == true)
        try flushNow(bed)
        let answers = watch(bed, node: 0)
        let first = try join(bed, "a", on: 0)
        #expect(first.entries["typist"]?["state"]?["typing"]?.stringValue == "1")
        let base = try base(bed)
        try bed.pump(until: { (try? bed.redis.command(["HSTRLEN", base + ":st", "typist"])) == ":2" }, what: "the typing key expired")
        let during = try join(bed, "b", on: 0)
        #expect((answers.built, answers.held) == (1, 1))
        #expect(during.entries["typist"]?["state"]?["typing"]?.stringValue == "1", "as of the last event: \(during.entries)")
        try expectFresh(bed, during, user: "b", reader: "fresh1", on: 0)
        try flushNow(bed)
        try bed.pump(until: { (try? self.presence(bed, 0).local[Self.room]?.delivered) == 5 }, what: "node 0 delivered the interval event")
        answers.built = 0
        let after = try join(bed, "c", on: 0)
        #expect(answers.built == 1)
        #expect(after.entries["typist"]?["state"]?["typing"] == nil, "\(after.entries)")
        try expectFresh(bed, after, user: "c", reader: "fresh2", on: 0)
    }

    @Test("a member who left and joined again with another info in one interval: the flush sends no event, and bumps the version")
    func infoChangeWithoutEvent() throws {
        var configuration = intervalConfiguration()
        let secret = "roster-cache-secret-of-32-bytes!!"
        configuration.auth.mode = .jwt
        configuration.auth.secret = secret
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "rosterinfo:")
        for broker in bed.brokers { broker.authenticator = try Authenticators.make(configuration, environment: [:]) }
        func token(_ user: String, _ info: String) -> JSON {
            .string(JWTMinter.mint(secret: secret, userId: user, info: ["team": .string(info)], ttlSeconds: 600, now: Timestamp(Date().timeIntervalSince1970 * 1000)))
        }
        for index in 0..<3 { _ = try join(bed, "m\(index)", on: 1, ["token": token("m\(index)", "old")]) }
        let changing = try join(bed, "x", on: 1, ["token": token("x", "old")])
        _ = try join(bed, "a", on: 0, ["token": token("a", "a")])
        try flushNow(bed)
        let flushed = try seq(bed)
        try bed.pump(until: { (try? self.presence(bed, 0).local[Self.room]?.delivered) == flushed }, what: "node 0 delivered the interval event")
        // a's second session: a member already, with the same state: no change, a roster at that seq.
        let answers = watch(bed, node: 0)
        let copy = try join(bed, "a", on: 0, ["token": token("a", "a")])
        #expect(copy.seq == flushed && (answers.built, answers.held) == (1, 0))
        #expect(copy.entries["x"]?["info"]?["team"]?.stringValue == "old", "\(copy.entries)")
        #expect(try bed.request(changing.client, "leave", ["channel": .string("room")])["ok"]?.boolValue == true)
        _ = try join(bed, "x", on: 1, ["token": token("x", "new")])
        try flushNow(bed)
        #expect(try seq(bed) == flushed, "no interval event: the net change is none")
        let after = try join(bed, "b", on: 0, ["token": token("b", "b")])
        #expect((answers.built, answers.held) == (2, 0), "built again after the flush")
        #expect(after.entries["x"]?["info"]?["team"]?.stringValue == "new", "\(after.entries)")
        try expectFresh(bed, after, user: "b", reader: "fresh", on: 0, ["token": token("fresh", "f")])
    }

    @Test("a channel that empties and starts again at the same seq does not match a copy of its earlier life")
    func channelStartsAgain() throws {
        var configuration = Configuration()
        configuration.presence.maxInstantEvents = 1
        configuration.presence.hysteresis = 0
        configuration.presence.intervalSeconds = 60
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "rosteragain:")
        let x = try join(bed, "x", on: 1)
        let y = try join(bed, "y", on: 0)
        #expect(y.seq == 1 && Set(y.entries.keys) == ["x", "y"], "interval mode from y's join: x announced at seq 1")
        let held = try #require(try presence(bed, 0).local[Self.room]?.roster)
        // Both leave in Redis behind node 0's back (as a reaper would for a node thought dead):
        // the channel empties; node 0 keeps y's local view and its copy.
        let others = try presence(bed, 1)
        for (user, session) in [("x", x.client.sessionId), ("y", y.client.sessionId)] {
            try eval(bed, others.leaveCommands(sessionId: session, user: Name(unchecked: user), channels: [Self.room], kind: .leave)[0])
        }
        #expect(try bed.redis.command(["EXISTS", try base(bed)]) == ":0", "the channel is gone from Redis")
        _ = try join(bed, "p", on: 1)
        _ = try join(bed, "q", on: 1)
        #expect(try seq(bed) == 1, "its new life is at seq 1 again")
        let answers = watch(bed, node: 0)
        #expect(try presence(bed, 0).local[Self.room]?.roster?.seq == held.seq)
        let again = try join(bed, "v", on: 0)
        #expect((answers.built, answers.held) == (1, 0), "the copy of the channel's earlier life at seq 1 is not used")
        #expect(Set(again.entries.keys) == ["p", "v"], "\(again.entries)")
    }

    /// Sends a join of `client` to the room without waiting for its answer; returns its request id.
    private func sendJoin(_ bed: ClusterBed, _ client: ClusterBed.Client) -> Int {
        client.nextId += 1
        let request: JSON = .object(JSONObject([("id", .int(client.nextId)), ("op", .string("join")), ("channel", .string("room"))]))
        bed.feed(client.node, .received(client.connection, request.encoded()))
        return client.nextId
    }

    /// Members a0…a4 on node 0: a0 joined (node 0 knows the room is in interval mode), and its
    /// join announced (seq 4) and delivered there; a1…a4 logged in, not joined.
    private func burstRoom(_ bed: ClusterBed) throws -> [ClusterBed.Client] {
        _ = try filledRoom(bed)
        _ = try join(bed, "a0", on: 0)
        try flushNow(bed)
        try bed.pump(until: { (try? self.presence(bed, 0).local[Self.room]?.delivered) == 4 }, what: "node 0 delivered seq 4")
        return try (1...4).map { try bed.login("a\($0)", on: 0) }
    }

    @Test("joins sent at once after a seq step: the first builds the roster, the others follow it and copy it")
    func burstFollowsOneRead() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rosterburst:")
        let joiners = try burstRoom(bed)
        let answers = watch(bed, node: 0)
        let ids = joiners.map { sendJoin(bed, $0) }
        try bed.pump(until: { zip(joiners, ids).allSatisfy { $0.replies[$1] != nil && $0.events.contains { $0.string("type") == "snapshot" } } },
                     what: "every joiner answered, with its snapshot")
        #expect((answers.built, answers.held, answers.followed) == (1, 0, 3), "one roster built for the four joins")
        let first = try snapshot(of: joiners[0])
        #expect(first.seq == 4 && Set(first.entries.keys) == ["m0", "m1", "m2", "m3", "a0", "a1"], "\(first.entries)")
        for (index, joiner) in joiners.enumerated().dropFirst() {
            let shown = try snapshot(of: joiner)
            var copied = shown.entries, read = first.entries
            copied["a\(index + 1)"] = nil
            read["a1"] = nil
            #expect(shown.seq == 4 && shown.occupancy == first.occupancy && copied == read, "a\(index + 1): \(shown.entries)")
        }
        try expectFresh(bed, (joiners[1], first.seq, first.occupancy, try snapshot(of: joiners[1]).entries), user: "a2", reader: "fresh", on: 0)
    }

    @Test("joins that followed a read whose roster was not the one at their seq get theirs from one snapshot read")
    func burstReadsAgainWhenTheSeqMoved() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rosterburstmoved:")
        let joiners = try burstRoom(bed)
        let base = try base(bed)
        // The first join runs in Redis; its answer waits (the node has it in flight), the
        // channel's seq moves (as an event would), then the others are sent and run.
        var held = false
        bed.delaysStoreReply = { index, commands in
            guard index == 0, !held, commands.contains(where: { if case .script(let script, _) = $0 { script.name == "presence.join" } else { false } })
            else { return false }
            held = true
            return true
        }
        let answers = watch(bed, node: 0)
        var ids = [sendJoin(bed, joiners[0])]
        try bed.pump(until: { (try? bed.redis.command(["HEXISTS", base + ":st", "a1"])) == ":1" }, what: "the first join ran")
        _ = try bed.redis.command(["HINCRBY", base, "seq", "1"])
        ids += joiners.dropFirst().map { sendJoin(bed, $0) }
        try bed.pump(until: { (try? bed.redis.command(["HEXISTS", base + ":st", "a4"])) == ":1" },
                     what: "the other joins ran (in order: a4's is the last)")
        bed.releaseHeldReplies(node: 0)
        try bed.pump(until: { zip(joiners, ids).allSatisfy { $0.replies[$1] != nil && $0.events.contains { $0.string("type") == "snapshot" } } },
                     what: "every joiner answered, with its snapshot")
        #expect((answers.built, answers.held, answers.followed) == (2, 0, 3), "the first join's roster, then one read for the three others")
        #expect(try snapshot(of: joiners[0]).seq == 4)
        for joiner in joiners.dropFirst() {
            #expect(try snapshot(of: joiner).seq == 5, "the roster at the seq it joined at, or later")
        }
    }

    @Test("a resync's snapshot read at an unchanged seq copies the roster too, and every session's snapshot equals a fresh read")
    func resyncCopies() throws {
        let bed = try ClusterBed(nodes: 2, configuration: intervalConfiguration(), prefix: "rosterresync:")
        _ = try filledRoom(bed)
        let a = try join(bed, "a", on: 0)
        let answers = watch(bed, node: 0)
        a.client.events.removeAll()
        try presence(bed, 0).resync(Self.room)
        try bed.pump(until: { a.client.events.contains { $0.string("type") == "snapshot" } }, what: "a's fresh snapshot")
        #expect((answers.built, answers.held) == (0, 1), "one snapshot read, the roster copied")
        let shown = try snapshot(of: a.client)
        #expect(Set(shown.entries.keys) == ["m0", "m1", "m2", "m3", "a"], "\(shown.entries)")
        try expectFresh(bed, (a.client, shown.seq, shown.occupancy, shown.entries), user: "a", reader: "fresh", on: 0)
    }
}
