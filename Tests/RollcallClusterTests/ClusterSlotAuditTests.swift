import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// The Redis Cluster engine's ratchet (docs/cluster.md, "Where the build stands"): the nodes
/// run every op of a session's life with their scripts under ``SlotAudit``, which marks each
/// script that touches keys of two Redis Cluster slots. The scripts marked must be exactly the
/// ones not split yet: one that starts crossing slots fails this test, and one that stops must
/// be taken off the list here. (The link's own scripts — heartbeat, start check, webhook
/// taker — run outside the core and are not audited.)
@Suite("Cluster: which scripts still touch keys of two Redis Cluster slots")
struct ClusterSlotAuditTests {
    /// The scripts that still cross slots in this scenario, to be split (docs/cluster.md, steps 2–5).
    /// With one key group every user's keys and every channel's share the tag `P{0}`: off this
    /// list since users' keys moved there (step 4) are `session.hold` and `status.*`, though
    /// on Redis Cluster's 1024 groups `session.hold` (channels) and the status scripts that
    /// read other users (``notSplitYetAcrossUserGroups``) still cross; `api.sessionsOfUser` is
    /// one user's, one slot on any count.
    static let notSplitYet: Set<String> = [
        "presence.join", "presence.leave", "presence.setState",
        "session.start", "session.claim", "session.end",
        "api.channels", "api.info",
    ]

    /// Scripts run by the nodes' timers (reaper, sweeps, flushes): whether this scenario runs
    /// them depends on timing, so they are not judged here.
    static let runByTimers: Set<String> = ["session.reap", "status.sweep", "presence.overdue", "presence.overdueExpiries", "presence.flush"]

    /// Sends `op`, waits for its reply and expects it ok.
    private func attempt(_ bed: ClusterBed, _ client: ClusterBed.Client, _ op: String, _ arguments: [String: JSON] = [:]) throws -> JSON {
        let reply = try bed.request(client, op, arguments)
        #expect(reply["ok"]?.boolValue == true, "\(op): \(reply.compactString)")
        return reply
    }

    @Test("a session's whole life, with the server API beside it: the scripts crossing slots are exactly those not split yet")
    func scriptsThatCrossSlots() throws {
        let bed = try ClusterBed(nodes: 2, configuration: Configuration(), prefix: "audit:", slotAudit: true)
        let alice = bed.open(on: 0), bob = bed.open(on: 1)
        let login = try attempt(bed, alice, "login", ["userId": "alice"])
        bob.sessionId = try attempt(bed, bob, "login", ["userId": "bob"])["result"]?.string("sessionId") ?? ""
        let token = login["result"]?.string("resumeToken") ?? ""
        alice.sessionId = login["result"]?.string("sessionId") ?? ""
        let room: [String: JSON] = ["channel": "room"]
        _ = try attempt(bed, alice, "join", room.merging(["state": .object(JSONObject([("mood", .string("calm"))])), "messages": true]) { $1 })
        _ = try attempt(bed, bob, "join", room.merging(["messages": true]) { $1 })
        _ = try attempt(bed, alice, "setState", room.merging(["state": .object(JSONObject([("mood", .string("busy"))]))]) { $1 })
        _ = try attempt(bed, bob, "publish", room.merging(["message": "hello"]) { $1 })
        _ = try attempt(bed, bob, "getOnlineUsers", room)
        _ = try attempt(bed, bob, "getUserChannels", ["userId": "alice"])
        _ = try attempt(bed, bob, "setCustomStatus", ["customStatus": "away"])
        _ = try attempt(bed, alice, "subscribeUserStatus", ["userIds": ["bob"]])
        _ = try attempt(bed, alice, "getUserStatus", ["userIds": ["bob"]])
        _ = try attempt(bed, alice, "getSubscriptions")
        _ = try attempt(bed, alice, "unsubscribeUserStatus", ["userIds": ["bob"]])
        _ = try bed.api("getChannels", [:], on: 0)
        _ = try bed.api("getInfo", [:], on: 1)
        // A drop, then a resume on the other node, then a leave and a logout.
        try bed.holdInRedis(alice)
        let again = bed.open(on: 1)
        let resumed = try attempt(bed, again, "login", ["userId": "alice", "resumeToken": .string(token)])
        #expect(resumed["result"]?["resumed"]?.boolValue == true, "\(resumed.compactString)")
        _ = try attempt(bed, again, "leave", room)
        _ = try attempt(bed, again, "logout")
        let bobsRecord = "audit:{0}s:" + (bob.sessionId.isEmpty ? "none" : bob.sessionId)
        _ = try bed.api("disconnectUser", ["userId": "bob"], on: 0)
        // bob's end runs after the API's answer: wait for it to be done, or refused.
        try bed.pump(until: { (try? bed.redis.command(["EXISTS", bobsRecord])) == ":0" }, what: "bob's session ended in Redis")
        let crossing = try bed.crossSlotScripts(among: LuaScriptTests.everyEngineScript).subtracting(Self.runByTimers)
        #expect(crossing == Self.notSplitYet,
                "crossing but not listed: \(crossing.subtracting(Self.notSplitYet).sorted()); listed but not crossing: \(Self.notSplitYet.subtracting(crossing).sorted())")
    }

    /// The scripts that still cross slots when users' keys are spread over Redis Cluster's 1024
    /// key groups, in ``usersAcrossKeyGroups()`` (no hold or resume: their channel keys are
    /// built for one group until step 2). Each crosses because of other owners' keys: the
    /// channel's (`presence.*`), `P tok:`/`P ns:`/`P nodes`/`P hm:` (`session.*`), the targets'
    /// (`status.subscribe`, `status.unsubscribe`), the subscribers' sessions (`status.setCustom`
    /// of a user with a subscriber in another group), `P nodes`/`P ns:`/the buckets (`api.info`).
    static let notSplitYetAcrossUserGroups: Set<String> = [
        "presence.join", "presence.leave",
        "session.start", "session.end",
        "status.setCustom", "status.subscribe", "status.unsubscribe",
        "api.info",
    ]

    @Test("users' scripts with 1024 key groups: those about one user run on its slot, the rest are listed")
    func usersAcrossKeyGroups() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "auditg:", slotAudit: true)
        let keys = ClusterKeys(prefix: "auditg:", groups: KeyGroups(count: KeyGroups.clusterCount))
        #expect(keys.userGroup(Name(unchecked: "alice")) != keys.userGroup(Name(unchecked: "bob")))
        let alice = try bed.login("alice", on: 0, ["customStatus": "here"])
        let bob = try bed.login("bob", on: 1)
        let room: [String: JSON] = ["channel": "room"]
        _ = try attempt(bed, alice, "setCustomStatus", ["customStatus": "away"])
        _ = try attempt(bed, alice, "join", room)
        _ = try attempt(bed, bob, "join", room)
        _ = try attempt(bed, alice, "subscribeUserStatus", ["userIds": ["bob"]])
        _ = try attempt(bed, alice, "getUserStatus", ["userIds": ["bob"]])
        _ = try attempt(bed, alice, "getSubscriptions")
        _ = try attempt(bed, bob, "setCustomStatus", ["customStatus": "busy"])
        _ = try attempt(bed, alice, "unsubscribeUserStatus", ["userIds": ["bob"]])
        _ = try attempt(bed, alice, "leave", room)
        _ = try attempt(bed, alice, "logout")
        _ = try bed.api("getInfo", [:], on: 1)
        let bobsRecord = keys.user(Name(unchecked: "bob")).session(bob.sessionId).record
        _ = try bed.api("disconnectUser", ["userId": "bob"], on: 0)
        try bed.pump(until: { (try? bed.redis.command(["EXISTS", bobsRecord])) == ":0" }, what: "bob's session ended in Redis")
        let crossing = try bed.crossSlotScripts(among: LuaScriptTests.everyEngineScript).subtracting(Self.runByTimers)
        let expected = Self.notSplitYetAcrossUserGroups
        #expect(crossing == expected,
                "crossing but not listed: \(crossing.subtracting(expected).sorted()); listed but not crossing: \(expected.subtracting(crossing).sorted())")
    }
}
