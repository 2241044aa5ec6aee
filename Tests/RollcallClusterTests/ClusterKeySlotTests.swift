import RollcallCore
import RollcallRedis
@testable import RollcallRedisEngine
import Testing

/// Every key of one channel hashes to one Redis Cluster slot (docs/cluster.md, "Keys"): the
/// channel's id sits in a hash tag, and the scripts derive its other keys by suffix.
@Suite struct ClusterKeySlotTests {
    private let keys = ClusterKeys(prefix: "rc:")
    private let suffixes = ["", ":m", ":st", ":n", ":s", ":hm", ":pend", ":lm", ":info", ":pinfo", ":lp", ":ttl:5:alice"]

    @Test(arguments: ["lobby", "a}b", "{x}", "}{", "ünï {code}", String(repeating: "z", count: 200)])
    func aChannelsKeysShareOneSlot(name: String) {
        for type in [ChannelType.message, .stream] {
            let base = keys.channel(ChannelKey(type: type, name: Name(unchecked: name))).base
            let slots = Set(suffixes.map { RedisClusterSlot.of(base + $0) })
            #expect(slots.count == 1, "\(base): \(slots)")
        }
    }

    @Test func channelsSpreadOverSlots() {
        let slots = Set((0..<1000).map { RedisClusterSlot.of(keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room\($0)"))).base) })
        #expect(slots.count > 900, "1000 channels land in \(slots.count) slots")
    }

    @Test func everyChannelScriptDeclaresTheChannelsKeyFirst() {
        let channel = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "lobby")))
        for script in [PresenceScripts.join, PresenceScripts.leave, PresenceScripts.setState, PresenceScripts.flush,
                       PresenceScripts.publish, PresenceScripts.onlineUsers, PresenceScripts.readExpiries, PresenceScripts.snapshot] {
            #expect(script.store.keyCount >= 1, "\(script.store.name) declares the channel's key")
            #expect(script.parameters.first { $0.kind == .key }?.name == "channelBase", "\(script.store.name)")
        }
        #expect(channel.base == "rc:{c:m:5:lobby}")
    }
}
