import Foundation
@testable import RollcallCore
import RollcallProtocol
@testable import RollcallRedisEngine
import Testing

/// With more than one key group a leave runs in the channel's slot, then takes the channel off
/// the session's channels in the user's slot (`presence.userSide`, sent again until Redis
/// answers). A resume whose claim reads the session's channels before that second step landed
/// must not put the session back into the channel (chaos seed 207061897078743).
@Suite("Cluster: a resume after a leave whose user-side step has not landed")
struct ClusterResumeAfterLeaveTests {
    @Test("the resumed session is not in the channel it left, and its result does not list it")
    func aLeftChannelIsNotResumed() throws {
        var configuration = Configuration()
        configuration.cluster.keyGroupCount = KeyGroups.clusterCount
        let bed = try ClusterBed(nodes: 2, configuration: configuration, prefix: "leftresume:", heartbeatSeconds: 0.1)
        let keys = ClusterKeys(prefix: "leftresume:", groups: KeyGroups(count: KeyGroups.clusterCount))
        let room = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room")))
        #expect(room.groupNumber != keys.userGroup(Name(unchecked: "alice")), "the channel and the user are in two slots")
        let alice = try bed.login("alice", on: 0)
        for channel in ["room", "hall"] {
            #expect(try bed.request(alice, "join", ["channel": .string(channel)])["ok"]?.boolValue == true)
        }
        // The leave's step on alice's slot never reaches Redis (an outage of that master).
        bed.failFirstCall(running: "presence.userSide", on: 0, answerLost: false)
        #expect(try bed.request(alice, "leave", ["channel": "room"])["ok"]?.boolValue == true)
        let sessionChannels = keys.user(Name(unchecked: "alice")).group + "sc:" + alice.sessionId
        #expect(try bed.redis.command(["SISMEMBER", sessionChannels, room.id]) == ":1", "the user's side has not followed yet")
        try bed.holdInRedis(alice)
        let again = bed.open(on: 1)
        let resumed = try bed.request(again, "login", ["userId": "alice", "resumeToken": .string(alice.resumeToken)])
        #expect(resumed["result"]?["resumed"]?.boolValue == true, "\(resumed.compactString)")
        let listed = (resumed["result"]?["channels"]?.arrayValue ?? []).compactMap { $0["channel"]?.stringValue }
        #expect(listed == ["hall"], "\(resumed.compactString)")
        let session = try #require(bed.brokers[1].directory.session(id: alice.sessionId))
        #expect(session.presence.joined.keys.map(\.name.string) == ["hall"])
    }
}
