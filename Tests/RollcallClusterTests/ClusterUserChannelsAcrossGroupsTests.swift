import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// With more than one key group a user's channel list (`uc:`, in the user's slot) follows each
/// channel's own change in a second step: `getUserChannels` lists a channel only while the
/// user is a member there, so nobody reads it back after the `leave` or `timeout` event that
/// took the user out (PresenceEventTests' timeout on a Redis Cluster, session 47).
@Suite("Cluster: getUserChannels across key groups")
struct ClusterUserChannelsAcrossGroupsTests {
    @Test("a channel whose members no longer have the user is not listed, though the user's list still names it")
    func listsOnlyChannelsWithTheUserAMember() throws {
        let (bed, keys) = try ClusterBed.withClusterKeyGroups(nodes: 1, prefix: "ucg:")
        let userGroup = keys.userGroup(Name(unchecked: "alice"))
        let rooms = (0..<1000).map { "room\($0)" }.filter {
            keys.channel(ChannelKey(type: .message, name: Name(unchecked: $0))).groupNumber != userGroup
        }.prefix(2)
        let alice = try bed.login("alice", on: 0)
        for room in rooms {
            #expect(try bed.request(alice, "join", ["channel": .string(room)])["ok"]?.boolValue == true)
        }
        func listed() throws -> [String] {
            let reply = try bed.request(alice, "getUserChannels", ["userId": "alice"])
            #expect(reply["result"]?["totalChannel"]?.numberValue?.intValue == reply["result"]?["channels"]?.arrayValue?.count)
            return (reply["result"]?["channels"]?.arrayValue ?? []).compactMap { $0["channel"]?.stringValue }
        }
        #expect(try listed() == Array(rooms).sorted())
        // The first room's own step of a leave ran; the step on alice's slot has not yet.
        let first = keys.channel(ChannelKey(type: .message, name: Name(unchecked: rooms.first!)))
        #expect(try bed.redis.command(["ZREM", first.base + ":m", "alice"]) == ":1")
        #expect(try bed.redis.command(["ZCARD", keys.user(Name(unchecked: "alice")).channels]) == ":2", "the user's list still names both")
        #expect(try listed() == [rooms.last!])
    }
}
