import RollcallCore
import RollcallRedis
@testable import RollcallRedisEngine
import Testing

/// Every key of one channel hashes to one Redis Cluster slot (docs/cluster.md, "Keys" and
/// "Key groups"): the channel's group sits in a hash tag, and the scripts derive its other keys
/// by suffix; the groups spread channels evenly over masters.
@Suite struct ClusterKeySlotTests {
    private let keys = ClusterKeys(prefix: "rc:", groups: KeyGroups(count: KeyGroups.clusterCount))
    private let suffixes = ["", ":m", ":st", ":n", ":s", ":hm", ":pend", ":lm", ":info", ":pinfo", ":lp", ":ttl:5:alice"]

    @Test(arguments: ["lobby", "a}b", "{x}", "}{", "ünï {code}", String(repeating: "z", count: 200)])
    func aChannelsKeysShareOneSlotWithItsGroupsBuckets(name: String) {
        for type in [ChannelType.message, .stream] {
            let channel = keys.channel(ChannelKey(type: type, name: Name(unchecked: name)))
            let slots = Set((suffixes.map { channel.base + $0 } + [channel.channelList, channel.dueFlushes, channel.dueExpiries, channel.webhookStream]).map(RedisClusterSlot.of))
            #expect(slots.count == 1, "\(channel.base): \(slots)")
        }
    }

    @Test func groupsLandOnDistinctSlotsAndShareMastersEvenly() {
        let slots = keys.groups.all.map { RedisClusterSlot.of(keys.groupTag($0)) }
        #expect(Set(slots).count > 1000, "1024 groups land on \(Set(slots).count) slots")
        // 30,000 channels over three masters of equal slot ranges (what `redis-cli --cluster
        // create` assigns): each master's share within ±10 % of a third.
        var perMaster = [0, 0, 0]
        for index in 0..<30_000 {
            let base = keys.channel(ChannelKey(type: .message, name: Name(unchecked: "room\(index)"))).base
            perMaster[min(2, RedisClusterSlot.of(base) * 3 / RedisClusterSlot.count)] += 1
        }
        for share in perMaster { #expect(abs(share - 10_000) < 1_000, "per master: \(perMaster)") }
    }

    @Test func oneGroupOnOneRedis() {
        let single = ClusterKeys(prefix: "rc:")
        let names = (0..<100).map { single.channel(ChannelKey(type: .message, name: Name(unchecked: "room\($0)"))).group }
        #expect(Set(names) == ["rc:{0}"])
        var configuration = Configuration()
        configuration.cluster.redis = "redis://127.0.0.1:6379"
        #expect(KeyGroups(for: configuration).count == 1)
        // 1024 on Redis Cluster, over TLS too: no script crosses groups (KeyGroups.init(for:)).
        configuration.cluster.redis = "redis+cluster://127.0.0.1:7000,127.0.0.1:7001"
        #expect(KeyGroups(for: configuration).count == KeyGroups.clusterCount)
        #expect(KeyGroups(for: configuration).format == "rollcall-4/g1024")
        configuration.cluster.redis = "rediss+cluster://127.0.0.1:7000"
        #expect(KeyGroups(for: configuration).count == KeyGroups.clusterCount)
        configuration.cluster.redis = "redis+sentinel://127.0.0.1:26379/main"
        #expect(KeyGroups(for: configuration).count == 1)
        configuration.cluster.keyGroupCount = 7
        #expect(KeyGroups(for: configuration).format == "rollcall-4/g7")
    }

    @Test func everyChannelScriptDeclaresTheChannelsKeyFirst() {
        let channel = ClusterKeys(prefix: "rc:").channel(ChannelKey(type: .message, name: Name(unchecked: "lobby")))
        for script in [PresenceScripts.join, PresenceScripts.leave, PresenceScripts.setState, PresenceScripts.flush,
                       PresenceScripts.publish, PresenceScripts.onlineUsers, PresenceScripts.readExpiries, PresenceScripts.snapshot] {
            #expect(script.store.keyCount >= 1, "\(script.store.name) declares the channel's key")
            #expect(script.parameters.first { $0.kind == .key }?.name == "channelBase", "\(script.store.name)")
        }
        #expect(channel.base == "rc:{0}c:m:5:lobby")
    }
}
