import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// With more than one key group, each master's share of the cluster's data can be lost on its
/// own: a failover to a replica far behind, a master restarted empty. The heartbeat only sees
/// the control slot's master (`P{0}`: the epoch, the nodes' beats), so such a loss went
/// unnoticed and the cluster ran on half a state for good (channels of the lost groups without
/// their members, statuses offline, sessions resumed into it: docs/cluster.md, "Redis
/// Cluster", session 46's open item).
///
/// At each live beat the node also writes its beat into one key group of every master (the
/// lowest group that master serves; group 1 on one Redis): `P{<g>}gb:<node>`, Redis' time. As
/// the heartbeat does for the control slot, it reads back what it wrote before: when its last
/// beat there less `nodeTimeoutSeconds` is no longer in Redis (the key is gone, or older),
/// that master lost more than a node timeout of writes it had acknowledged. The node then
/// renews the cluster's epoch (``renew``), and every node treats it as the data loss it is
/// (PROTOCOL §9: sessions closed with 1012, registered again, old tokens no longer resume).
/// One command per master per beat; none with one key group, where the heartbeat sees it all.
final class GroupBeat {
    private let keys: ClusterKeys
    private let nodeId: String
    private let timeoutMs: Int64
    /// Redis' time of this node's first and latest group beat each group took, and when
    /// (monotonic ms) the latest was sent.
    private var taken: [Int: (first: Int64, latest: Int64, sentAt: Int64)] = [:]
    private var inFlight = 0
    /// The slot of each group's tag, computed once.
    private lazy var slots: [Int] = keys.groups.all.map { RedisClusterSlot.of(keys.groupTag($0)) }

    /// How long a group beat's key lives: ten node timeouts, at least a minute. A node whose
    /// last beat there is older than half of that does not compare (its key may have expired).
    var keyLifetimeMs: Int64 { max(60_000, 10 * timeoutMs) }

    init(configuration: Configuration, nodeId: String) {
        keys = ClusterKeys(configuration: configuration)
        self.nodeId = nodeId
        timeoutMs = configuration.cluster.nodeTimeoutSeconds.milliseconds
    }

    /// Writes the node's beat into `mark` and answers `{'ok', now}`, or `{'lost', now, stored}`
    /// (and writes nothing) when the node's beat there is older than `since` (0: no comparison).
    static let script = LuaScript("cluster.groupBeat", parameters: [.key("mark"), .number("since"), .number("lifetimeMs")], body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        if since > 0 then
          local stored = tonumber(redis.call('GET', mark) or '0')
          if stored < since then return {'lost', now, stored} end
        end
        redis.call('SET', mark, now, 'PX', lifetimeMs)
        return {'ok', now}
        """)

    /// Takes the cluster's epoch from `expected` to a renewed one (`renewed-<now>-<node>`),
    /// unless another node did first: 1 when this call renewed it.
    static let renew = LuaScript("cluster.renewEpoch", parameters: [.key("meta"), .text("expected"), .text("node")],
                                 library: NodeHeartbeat.luaRenewEpoch, body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        if redis.call('HGET', meta, 'epoch') ~= expected then return 0 end
        renewEpoch(meta, node, now)
        return 1
        """)

    /// Runs ``renew`` from `epoch` (the one this node knows); `done` runs once Redis answered
    /// or the call failed.
    func renewEpoch(from epoch: String, on route: StoreRoute, then done: @escaping () -> Void) {
        route.run(Self.renew, arguments: Self.renew.arguments(["meta": keys.meta, "expected": epoch, "node": nodeId])) { _ in done() }
    }

    /// The groups to beat in: the lowest group other than 0 of each master on a Redis Cluster
    /// (`map`), group 1 on one Redis with more than one group, none with one group.
    func groups(on map: RedisClusterSlotMap?) -> [Int] {
        guard keys.groups.count > 1 else { return [] }
        guard let map else { return [1] }
        var chosen: [RedisHostPort: Int] = [:]
        for group in keys.groups.all where group != 0 {
            guard let master = map.master(of: slots[group]), chosen[master] == nil else { continue }
            chosen[master] = group
        }
        return chosen.values.sorted()
    }

    /// What a beat compares with (0: nothing): the latest beat Redis took there less a node
    /// timeout, once the node's beats there span a node timeout (a first beat a failover lost
    /// within its usual lag is no loss to act on), and unless the latest is older than half the
    /// key's life (it may have expired while the node was paused).
    private func comparand(after beats: (first: Int64, latest: Int64, sentAt: Int64), now: Int64) -> Int64 {
        let since = beats.latest - timeoutMs
        guard since >= beats.first, now - beats.sentAt < keyLifetimeMs / 2 else { return 0 }
        return max(1, since)
    }

    /// Forgets every earlier beat (the node registered again: nothing to compare with).
    func forget() { taken.removeAll() }

    /// One beat in each of `groups` (skipped while the last round is unanswered); `lost` is
    /// called with a group whose master lost the node's earlier beats.
    func beat(_ groups: [Int], on route: StoreRoute, lost: @escaping (Int, Int64) -> Void) {
        guard inFlight == 0 else { return }
        let now = MonotonicClock.now
        for group in groups {
            let since = taken[group].map { comparand(after: $0, now: now) } ?? 0
            let arguments = Self.script.arguments(["mark": keys.groupTag(group) + "gb:" + nodeId, "since": since, "lifetimeMs": keyLifetimeMs])
            inFlight += 1
            route.run(Self.script, arguments: arguments) { [weak self] result in
                guard let self else { return }
                inFlight -= 1
                guard case .success(let reply) = result, let elements = reply.elements, elements.count >= 2,
                      let time = elements[1].integer else { return }
                switch elements[0].text {
                case "ok":
                    taken[group] = (taken[group]?.first ?? time, max(taken[group]?.latest ?? time, time), now)
                case "lost":
                    // Kept: until the node registered again (``forget()``), each beat here finds
                    // the loss again, so a renewal that failed is tried again.
                    lost(group, elements.count > 2 ? elements[2].integer ?? 0 : 0)
                default:
                    break
                }
            }
        }
    }
}
