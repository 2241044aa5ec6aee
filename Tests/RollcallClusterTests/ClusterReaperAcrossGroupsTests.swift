import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// The reaper with Redis Cluster's 1024 key groups (docs/cluster.md, "Sessions across nodes",
/// "The scans"): a node's sessions are listed per group (`P{<g>}ns:<node>`), a dead node is
/// declared on the control slot (`session.declareDead`), its sessions are orphaned and timed out
/// group by group (`session.reapGroup`) by the one node that holds the scanner's lease, and it
/// leaves `P{0}reaping` once every group answered (`session.reaped`).
@Suite("Cluster: the reaper per key group")
struct ClusterReaperAcrossGroupsTests {
    static let users = (0..<12).map { "user\($0)" }

    /// A bed of three nodes with 1024 groups, `users` logged in on n3 (index 2) asking a 1 s hold
    /// (clamped to the protocol's least, 5 s),
    /// the first four members of `room`. 0.1 s heartbeats (nodeTimeout 1 s): the scanner reads
    /// the groups a slice per tick (session 44; with 2 × 1024 reads at every tick these beds
    /// had to tick at 0.5 s).
    private func bedWithSessionsOnNodeTwo(prefix: String, slotAudit: Bool = false) throws -> (ClusterBed, ClusterKeys, [ClusterBed.Client]) {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let bed = try ClusterBed(nodes: 3, configuration: configuration, prefix: prefix, heartbeatSeconds: 0.1, slotAudit: slotAudit)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: KeyGroups.clusterCount))
        var clients: [ClusterBed.Client] = []
        for (index, user) in Self.users.enumerated() {
            let client = try bed.login(user, on: 2, ["presenceTimeout": .int(1)])
            if index < 4 {
                let joined = try bed.request(client, "join", ["channel": "room", "messages": true])
                #expect(joined["ok"]?.boolValue == true, "\(user)'s join: \(joined.compactString)")
            }
            clients.append(client)
        }
        return (bed, keys, clients)
    }

    private func group(of user: String, _ keys: ClusterKeys) -> Int { keys.userGroup(Name(unchecked: user)) }

    /// `read` (Lua over `KEYS[1]` = `key`, a string or nil) as text, `none` for nil: the test
    /// Redis client answers a command's first line only, so the value comes back as a status.
    private func text(_ bed: ClusterBed, _ read: String, of key: String) throws -> String {
        let line = try bed.redis.command(["EVAL", "\"return {ok = \(read) or 'none'}\"", "1", key])
        return line.hasPrefix("+") ? String(line.dropFirst()) : line
    }

    @Test("a killed node's sessions in many key groups all time out within presence timeout + nodeTimeout + 5 s, and the reaper's scripts keep to one slot each")
    func aDeadNodesSessionsAcrossGroupsTimeOut() throws {
        let (bed, keys, clients) = try bedWithSessionsOnNodeTwo(prefix: "reapg:", slotAudit: true)
        let groups = Set(Self.users.map { group(of: $0, keys) })
        #expect(groups.count >= 8, "the users sit in \(groups.count) groups")
        // Each session is listed in its own group's `P{<g>}ns:n3`, none in group 0's but its own.
        for (user, client) in zip(Self.users, clients) {
            let listed = keys.nodeSessions(of: "n3", group: group(of: user, keys))
            #expect(try bed.redis.command(["SISMEMBER", listed, client.sessionId]) == ":1", "\(user) in \(listed)")
        }
        // One node scans the groups: over three of its ticks, the others read no group's bucket.
        var reapGroupCalls = [0, 0, 0]
        bed.beforeStoreCall = { index, commands in
            for case .script(let script, _) in commands where script.name == "session.reapGroup" { reapGroupCalls[index] += 1 }
        }
        // A slice of the groups per tick, all of them in a second (ten 0.1 s ticks).
        try bed.pump(until: { reapGroupCalls.max()! >= 3 * KeyGroups.clusterCount }, what: "three rounds over every group")
        #expect(reapGroupCalls.filter { $0 == 0 }.count == 2, "reapGroup calls per node: \(reapGroupCalls)")
        bed.beforeStoreCall = nil
        let scanner = reapGroupCalls.firstIndex { $0 > 0 } ?? 0
        let other = scanner == 0 ? 1 : 0
        // getInfo sums the node's sessions over the groups.
        let info = try bed.api("getInfo", [:], on: other)
        let counted = info.body["result"]?["nodes"]?.arrayValue?.first { $0.string("nodeId") == "n3" }?["sessions"]?.numberValue?.intValue
        #expect(counted == Self.users.count, "\(info.body.compactString)")
        #expect(info.body["result"]?["sessions"]?.numberValue?.intValue == Self.users.count, "\(info.body.compactString)")

        bed.stop(node: 2)
        let stoppedAt = Date()
        // PROTOCOL §9's bound is on the sessions' timeouts: their records gone.
        try bed.pump(until: {
            zip(Self.users, clients).allSatisfy { user, client in
                (try? bed.redis.command(["EXISTS", keys.user(Name(unchecked: user)).session(client.sessionId).record])) == ":0"
            }
        }, timeout: 20, what: "every session of the dead node timed out")
        let took = Date().timeIntervalSince(stoppedAt)
        // PROTOCOL §9: presence timeout (the login's 1 s is clamped to 5 s, PROTOCOL §2) +
        // nodeTimeoutSeconds (1 s) + 5 s.
        #expect(took < 11, "the last session timed out \(String(format: "%.1f", took)) s after the node stopped")
        // Then the node's bookkeeping is gone too: its lists per group, its place among the
        // nodes being reaped and among the live ones.
        try bed.pump(until: {
            Self.users.allSatisfy { user in
                (try? bed.redis.command(["EXISTS", keys.nodeSessions(of: "n3", group: group(of: user, keys))])) == ":0"
            }
                && (try? bed.redis.command(["SCARD", keys.controlTag + "reaping"])) == ":0"
                && (try? bed.redis.command(["ZSCORE", keys.nodes, "n3"])) == "$-1"
        }, timeout: 20, what: "the dead node reaped")
        let after = try bed.api("getInfo", [:], on: other)
        #expect(after.body["result"]?["sessions"]?.numberValue?.intValue == 0, "\(after.body.compactString)")

        // The control slot's steps touch it alone, and a group's step its group's keys alone:
        // the channels are refenced by the scanner, and the kept messages are the channels'
        // (session 46; before, `forget` deleted `P{0}hm*`).
        let oneSlot = try bed.crossSlotScripts(among: [SessionScripts.declareDead, SessionScripts.reaped, SessionScripts.reapGroup,
                                                       SessionScripts.handOver])
        #expect(oneSlot.isEmpty, "\(oneSlot.sorted())")
    }

    @Test("a dead node stays among the nodes being reaped until the channels of its orphaned sessions are refenced, refences lost included")
    func aDeadNodeIsReapedOnlyOnceItsOrphansAreRefenced() throws {
        let (bed, keys, clients) = try bedWithSessionsOnNodeTwo(prefix: "reaprf:")
        let room = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).base
        let member = clients[0].sessionId
        let log = keys.refenceLog(of: "n3", group: group(of: Self.users[0], keys))
        #expect(try text(bed, "redis.call('HGET', KEYS[1], '\(member)')", of: room + ":o") == "n3")
        // Every refence is lost (never reaches Redis) while the scanner reaps the dead node.
        var refencesLost = 0, reapsSinceLoss = 0
        bed.dropsStoreCall = { _, commands in
            guard commands.contains(where: { if case .script(let script, _) = $0 { script.name == "presence.refence" } else { false } }) else {
                return false
            }
            refencesLost += 1
            return true
        }
        bed.beforeStoreCall = { _, commands in
            for case .script(let script, _) in commands where script.name == "session.reapGroup" && refencesLost > 0 { reapsSinceLoss += 1 }
        }
        bed.stop(node: 2)
        // Orphaned (held, no node) and logged; the refences sent again at each round, and lost.
        try bed.pump(until: { reapsSinceLoss >= 3 * KeyGroups.clusterCount }, timeout: 10, what: "three rounds of reapGroup after a lost refence")
        #expect(try bed.redis.command(["SISMEMBER", log, member]) == ":1", "logged in \(log)")
        #expect(try bed.redis.command(["SISMEMBER", keys.controlTag + "reaping", "n3"]) == ":1", "still being reaped")
        #expect(try text(bed, "redis.call('HGET', KEYS[1], '\(member)')", of: room + ":o") == "n3", "the copy names the dead node")
        // The refences get through: the copies say held with no node, the logs empty, the node reaped.
        bed.dropsStoreCall = nil
        try bed.pump(until: {
            (try? bed.redis.command(["SISMEMBER", keys.controlTag + "reaping", "n3"])) == ":0"
        }, timeout: 10, what: "n3 reaped")
        #expect(try bed.redis.command(["EXISTS", log]) == ":0")
        let copy = try text(bed, "redis.call('HGET', KEYS[1], '\(member)')", of: room + ":o")
        #expect(copy == "" || copy == "none", "held with no node (or timed out and left since): \(copy)")
    }

    @Test("an orphan's refence that comes late changes no copy that names another node: a claim elsewhere came first")
    func aLateOrphanRefenceLeavesAClaimAlone() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "reaplate:", heartbeatSeconds: 0.1)
        let keys = ClusterKeys(prefix: "reaplate:", groups: KeyGroups(count: KeyGroups.clusterCount))
        let alice = try bed.login("alice", on: 0)
        #expect(try bed.request(alice, "join", ["channel": "room", "messages": true])["ok"]?.boolValue == true)
        let room = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).base
        func refence(from node: String) throws -> String {
            let command = PresenceScripts.refence(channelBase: room, session: alice.sessionId, owner: "", held: true, from: node)
            return try bed.run([command], on: 1).first?[0].text ?? "?"
        }
        // As if n2 had been declared dead and this were its orphans' refence, sent late: the
        // copy names n1, which has the session now.
        #expect(try refence(from: "n2") == "moved")
        #expect(try text(bed, "redis.call('HGET', KEYS[1], '\(alice.sessionId)')", of: room + ":o") == "n1")
        #expect(try text(bed, "tostring(redis.call('SISMEMBER', KEYS[1], '\(alice.sessionId)'))", of: room + ":hm") == "0", "still live for messages")
        // From the node the copy names, it applies.
        #expect(try refence(from: "n1") == "ok")
        #expect(try text(bed, "redis.call('HGET', KEYS[1], '\(alice.sessionId)')", of: room + ":o") == "")
    }

    @Test("a reapGroup that names a node dead and runs after it revived leaves the sessions it took since alone", arguments: [1, KeyGroups.clusterCount])
    func aLateReapGroupLeavesARevivedNodesSessionsAlone(groups: Int) throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = groups
        let prefix = "reaplate\(groups):"
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: prefix, heartbeatSeconds: 0.1)
        let keys = ClusterKeys(prefix: prefix, groups: KeyGroups(count: groups))
        let alice = try bed.login("alice", on: 0)
        let group = keys.userGroup(Name(unchecked: "alice"))
        let record = keys.user(Name(unchecked: "alice")).session(alice.sessionId).record
        let started = Int64(try text(bed, "redis.call('HGET', KEYS[1], 'started')", of: record)) ?? 0
        func reap(diedAt: Int64) throws {
            _ = try bed.run([SessionScripts.reapGroup(keys: keys, group: group, reaping: [.init(node: "n1", declaredDeadAt: diedAt)],
                                                      nodeTimeoutMs: 1000, batch: 200, endsDue: false)], on: 1)
        }
        // Declared dead before alice's session started: the node took it after it revived.
        try reap(diedAt: started - 1)
        #expect(try text(bed, "redis.call('HGET', KEYS[1], 'node')", of: record) == "n1", "left alone")
        #expect(try bed.redis.command(["SISMEMBER", keys.nodeSessions(of: "n1", group: group), alice.sessionId]) == ":1")
        // Declared dead after it started: orphaned.
        try reap(diedAt: started + 1)
        #expect(try text(bed, "redis.call('HGET', KEYS[1], 'node')", of: record) == "", "orphaned")
        #expect(try bed.redis.command(["SISMEMBER", keys.nodeSessions(of: "n1", group: group), alice.sessionId]) == ":0")
    }

    @Test("a node that starts again with the id of an earlier run hands over that run's sessions in every key group")
    func anEarlierRunsSessionsAreHeldInEveryGroup() throws {
        let (bed, keys, clients) = try bedWithSessionsOnNodeTwo(prefix: "regg:")
        bed.stop(node: 2)
        _ = try ClusterStartCheck.run(configuration: bed.brokers[2].configuration, nodeId: "n3")
        for (user, client) in zip(Self.users, clients) {
            let group = group(of: user, keys)
            let record = keys.user(Name(unchecked: user)).session(client.sessionId).record
            #expect(try bed.redis.command(["EXISTS", keys.nodeSessions(of: "n3", group: group)]) == ":0", "\(user)'s group \(group)")
            #expect(try bed.redis.command(["ZRANK", keys.heldSessions(group: group), client.sessionId]).hasPrefix(":"), "\(user) held")
            #expect(try text(bed, "redis.call('HGET', KEYS[1], 'node')", of: record) == "", "\(user) has no node")
        }
        // Session 45: the channels of the sessions handed over are refenced, those of group 0's
        // (orphaned by the register script) included: held with no node.
        let room = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room"))).base
        for client in clients.prefix(4) {
            #expect(try bed.redis.command(["HGET", room + ":o", client.sessionId]) == "$0", "room's copy of \(client.sessionId) names no node")
            #expect(try bed.redis.command(["SISMEMBER", room + ":hm", client.sessionId]) == ":1", "\(client.sessionId) held for room's messages")
        }
    }
}
