import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import RollcallTestSupport
import Testing

/// Session 49: a session's first join of a channel whose key group is not its user's runs the
/// user's step (`presence.userSide`) first and then the join, checked: two scripts. Before, the
/// join went to the channel first, answered `first` (no fence copy there), and came back after
/// the same step: three scripts and three round trips for most first joins on Redis Cluster.
@Suite("Cluster: a first join across key groups is two scripts")
struct ClusterFirstJoinStepsTests {
    @Test("first join across groups: userSide then join; a rejoin: the join alone; a user in the channel's group: the join alone")
    func firstJoinSteps() throws {
        let (bed, keys) = try ClusterBed.withClusterKeyGroups(nodes: 2, prefix: "firststeps:")
        let users = (0..<2000).map { "user\($0)" }
        let room = ChannelKey(type: .message, name: Name(unchecked: "room"))
        let roomGroup = keys.channel(room).groupNumber
        let across = try #require(users.first { keys.userGroup(Name(unchecked: $0)) != roomGroup })
        let alongside = try #require(users.first { keys.userGroup(Name(unchecked: $0)) == roomGroup })
        var scripts: [String] = []
        bed.beforeStoreCall = { node, commands in
            guard node == 0 else { return }
            for case .script(let script, _) in commands where script.name.hasPrefix("presence.") { scripts.append(script.name) }
        }
        let watcher = try bed.login("watcher", on: 1)
        #expect(try bed.request(watcher, "join", ["channel": "room"])["ok"]?.boolValue == true)

        let client = try bed.login(across, on: 0)
        scripts = []
        let first = try bed.request(client, "join", ["channel": "room", "state": ["mood": "calm"]])
        #expect(first["ok"]?.boolValue == true, "\(first.compactString)")
        #expect(scripts == ["presence.userSide", "presence.join"], "\(scripts)")
        // The join wrote the fence copy and the user's indexes, and the others saw the member.
        #expect(try bed.redis.command(["HGET", keys.channel(room).base + ":o", client.sessionId]) == "$2")
        #expect(try bed.redis.command(["SISMEMBER", keys.user(Name(unchecked: across)).session(client.sessionId).channels,
                                       ClusterKeys.channelId(room)]) == ":1")
        try bed.pump(until: { watcher.events.contains { $0.string("type") == "join" && $0.string("publisher") == across } },
                     what: "the watcher hears the join")

        scripts = []
        let again = try bed.request(client, "join", ["channel": "room", "state": ["mood": "busy"]])
        #expect(again["ok"]?.boolValue == true, "\(again.compactString)")
        #expect(scripts == ["presence.join"], "a session that joined has its copy: \(scripts)")

        let local = try bed.login(alongside, on: 0)
        scripts = []
        #expect(try bed.request(local, "join", ["channel": "room"])["ok"]?.boolValue == true)
        #expect(scripts == ["presence.join"], "the record is in the channel's slot: \(scripts)")
    }
}
