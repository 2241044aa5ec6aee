import RollcallCore
import RollcallRedis

/// How the Redis engine spreads the keys of its owners (channels, users) over hash tags
/// (docs/cluster.md, "Key groups"). Every key of one owner carries its group's tag
/// (`P{<group>}`; a channel's group is the hash of `c:<id>`, a user's of `u:<id>`), so a script about one owner runs on one Redis Cluster slot,
/// and each group's tag holds that group's share of the cluster-wide indexes (its *buckets*:
/// `P{<group>}channels`, `P{<group>}due`, …), which the owner's scripts write atomically
/// with the change. A reader of an index (the list of channels, the due flushes, the webhook
/// stream, the reaper) reads every group's bucket (``all``) and merges.
///
/// On one Redis (or Sentinel) there is one group: every index is one key, as on a single
/// server it costs nothing to keep them together. Redis Cluster is built for
/// ``clusterCount`` groups: enough that masters share them evenly (about ±5 % with 3 masters),
/// few enough that a reader asks each group in one batch (``init(for:)``).
package struct KeyGroups: Equatable, Sendable {
    /// How many groups (at least 1).
    package let count: Int

    /// The groups Redis Cluster is built for (tests set it with `keyGroupCount`).
    package static let clusterCount = 1024

    /// `count` groups.
    package init(count: Int) {
        self.count = max(1, count)
    }

    /// The groups `configuration.cluster` runs with: `keyGroupCount` when set (tests), else
    /// what the kind of Redis needs: ``clusterCount`` on Redis Cluster (`redis+cluster://`,
    /// `rediss+cluster://`), where no script crosses two groups' slots since session 46 (the
    /// slot audit's 1024-group list is empty: docs/cluster.md, "Where the build stands"), so
    /// the keys spread over every master; 1 on one Redis or Sentinel.
    package init(for configuration: Configuration) {
        if let count = configuration.cluster.keyGroupCount {
            self.init(count: count)
        } else if let url = configuration.cluster.redis, case .cluster? = try? RedisTarget(parsing: url) {
            self.init(count: Self.clusterCount)
        } else {
            self.init(count: 1)
        }
    }

    /// The group of an owner's id (FNV-1a of its bytes): 0 when there is one group.
    package func group(of id: String) -> Int {
        guard count > 1 else { return 0 }
        var hash: UInt32 = 2_166_136_261
        for byte in id.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int(hash % UInt32(count))
    }

    /// Every group, for a reader that merges the buckets.
    package var all: Range<Int> { 0..<count }

    /// The format `P{0}meta` records (`ClusterStartCheck`): nodes of another key layout never
    /// share one Redis. `rollcall-4`: the keys of no owner moved under group 0's tag.
    package var format: String { "rollcall-4/g\(count)" }

    /// Lua, for the scripts that still build the keys of channels they were not given (the
    /// ones that cross owners, until they are split: docs/cluster.md, "Where the build
    /// stands"): `channelBaseOf(id)`, the base key of the channel `id` when there is one group
    /// (which is all a broker runs with until then). Needs a `prefix` local.
    static let luaChannelBaseOfOneGroup = """
        local function channelBaseOf(id) return prefix .. '{0}c:' .. id end

        """
}
