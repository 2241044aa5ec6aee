import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// A node's heartbeat (PROTOCOL §9): every `cluster.heartbeatSeconds` it writes Redis' time
/// into the cluster's node set and counts the nodes heard within `nodeTimeoutSeconds`.
package final class NodeHeartbeat {
    let nodeId: String
    let keys: ClusterKeys
    let intervalSeconds: Double
    let timeoutMs: Int64
    /// After each beat: the number of live nodes, the cluster's epoch (`P meta`; nil when
    /// Redis has none, i.e. it lost the cluster's data), and whether this node had been
    /// removed from the live nodes (declared dead by the others) since its last beat.
    var onBeat: ((Int, String?, Bool) -> Void)?
    /// After each beat that found the node live: what it saw, for the core (``StoreBeat``).
    var onLive: ((StoreBeat) -> Void)?
    /// The error Redis answered the latest beat with (`OOM …`, `NOREPLICAS …`, `READONLY …`),
    /// nil once a beat succeeds again: Redis is reachable but cannot take the node's writes,
    /// so `/readyz` says so (noticed within `heartbeatSeconds`).
    private(set) var answeredError: String?
    /// The longest a beat waited for its answer (or its failure), in milliseconds: a beat
    /// queued behind the node's own commands on the link shows here (issue 29, the join burst).
    /// Tests set it back to 0 to measure from a moment on.
    var slowestBeatMs: Int64 = 0
    /// Called before the first beat once the route is ready again after a beat found it down
    /// or failed on the link (on Redis Cluster, where no one connection's state says so: the
    /// link opens the grace window there, ``ClusterLink``).
    var onBackAfterOutage: (() -> Void)?
    private var outage = false
    private var timer: LoopTimer!
    private var beats = 0
    /// When (monotonic ms) the latest beat Redis took was sent: the others cannot declare this
    /// node dead before that moment plus the timeout.
    private var lastTakenBeatSentAt: Int64?
    /// Redis' time of the latest beat it took from this node (``beat``'s `since` follows it).
    private var latestTakenBeatTime: Int64?
    private var route: StoreRoute?

    /// Writes the beat and counts live nodes, in one step with Redis' clock. Answers the
    /// count, the epoch, 1 when the beat put the node back among the live nodes, 2 when
    /// the node is marked dead (`P dead:<id>`, by the reaper that declared it dead): then it
    /// stays out until it has fenced itself and ``revive`` runs, however many of its beats
    /// arrive late; Redis' time; and, when the node is live, each live node's id and how
    /// long ago it beat (ms; ``StoreBeat``).
    ///
    /// `since` is the time of the latest beat Redis took from this node less
    /// `nodeTimeoutSeconds` (0: none yet). When the node's record holds an older beat, Redis
    /// went back in time: a failover promoted a replica that lacked more than a node timeout
    /// of writes it had acknowledged (Redis replicates asynchronously). The cluster's state is
    /// then older than what clients were told, so the beat gives the cluster a new epoch
    /// (`P meta`, with `renewed`, the time): every node treats that as a data loss (PROTOCOL
    /// §9: its sessions close with 1012, it registers again, which hands over what its record
    /// still lists). A node whose lost beats predate a renewal does not renew again. A shorter
    /// loss (a Sentinel failover loses the writes the old master took until it was demoted,
    /// about a second) is not told apart from a failover that lost nothing.
    package static let beat = LuaScript("cluster.beat", parameters: [
        .key("nodes"), .text("node"), .key("nodeKey"), .number("timeoutMs"), .key("meta"), .key("deadMark"), .number("since"),
    ], library: luaRenewEpoch, body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        -- Redis lost the cluster's data (no epoch): the beat writes nothing, so the node is no
        -- live node (its logins are refused, `fenced`) until it registered again; a beat that
        -- put it back would let it write keys into an unregistered prefix.
        local epoch = redis.call('HGET', meta, 'epoch')
        if not epoch then return {0, false, 0} end
        -- Every node silent for the timeout means Redis was out of reach (or stopped), not that
        -- nodes died: the first beat after such a silence opens a grace window (PROTOCOL §9).
        local last = tonumber(redis.call('HGET', meta, 'lastBeat') or '0')
        if last > 0 and now - last >= timeoutMs then redis.call('HSET', meta, 'grace', now) end
        redis.call('HSET', meta, 'lastBeat', now)
        if redis.call('EXISTS', deadMark) == 1 then
          return {redis.call('ZCOUNT', nodes, now - timeoutMs, '+inf'), epoch, 2, now}
        end
        local stored = tonumber(redis.call('HGET', nodeKey, 'lastHeartbeat') or '0')
        if since > 0 and stored > 0 and stored < since and tonumber(redis.call('HGET', meta, 'renewed') or '0') < since then
          epoch = renewEpoch(meta, node, now)
        end
        local added = redis.call('ZADD', nodes, now, node)
        redis.call('HSET', nodeKey, 'lastHeartbeat', now)
        local live, ages = redis.call('ZRANGEBYSCORE', nodes, now - timeoutMs, '+inf', 'WITHSCORES'), {}
        for i = 1, #live, 2 do
          ages[#ages + 1] = live[i]
          ages[#ages + 1] = now - tonumber(live[i + 1])
        end
        return {#live / 2, epoch, added, now, ages}
        """)

    /// Lua: `renewEpoch(meta, node, now)` gives the cluster a new epoch after Redis went back in
    /// time (`renewed-<now>-<node>`, which ``ClusterLink`` reads as a rollback, and `renewed`
    /// = `now`) and returns it. The heartbeat's and the group beat's (``GroupBeat/renew``).
    static let luaRenewEpoch = """
        local function renewEpoch(meta, node, now)
          local epoch = 'renewed-' .. now .. '-' .. node
          redis.call('HSET', meta, 'epoch', epoch, 'renewed', now)
          return epoch
        end

        """

    /// After the node learned that it was declared dead and fenced itself (its connections
    /// closed, its sessions handed over): it lives again, with no session — once the reaper has
    /// orphaned its sessions in every key group (it left `P{0}reaping`). Before, answers
    /// `reaping` and changes nothing: a session it started once back, in a group not reaped yet,
    /// would be orphaned with the old ones behind its back. The next beat says "dead" again,
    /// and the node tries again.
    static let revive = LuaScript("cluster.revive", parameters: [
        .key("nodes"), .text("node"), .key("nodeKey"), .key("deadMark"), .key("reaping"),
    ], body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        if redis.call('SISMEMBER', reaping, node) == 1 then return 'reaping' end
        redis.call('DEL', deadMark)
        redis.call('ZADD', nodes, now, node)
        redis.call('HSET', nodeKey, 'lastHeartbeat', now)
        return 'ok'
        """)

    init(configuration: Configuration, nodeId: String, loop: EventLoop) {
        self.nodeId = nodeId
        keys = ClusterKeys(prefix: configuration.cluster.keyPrefix)
        intervalSeconds = configuration.cluster.heartbeatSeconds
        timeoutMs = Int64((configuration.cluster.nodeTimeoutSeconds * 1000).rounded())
        timer = LoopTimer(loop: loop) { [unowned self] in self.fire() }
    }

    func start(on route: StoreRoute) {
        self.route = route
        fire()
    }

    func stop() {
        timer.cancel()
        route = nil
    }

    /// Whether the other nodes may have declared this node dead: no beat that Redis took was
    /// sent within the last `nodeTimeoutSeconds` (the node was paused, or its link to Redis
    /// stalled). False before the first beat is taken.
    func mayBeDeclaredDead(now: Int64) -> Bool {
        guard let sentAt = lastTakenBeatSentAt else { return false }
        return now - sentAt >= timeoutMs
    }

    /// Beats now rather than at the next interval (the node wants to know whether it is still
    /// alive: ``onBeat`` says so).
    func beatNow() { fire() }

    private func fire() {
        timer.schedule(after: intervalSeconds)
        guard let route, route.isReady else {
            // Not ready before any beat was taken is the start, not an outage.
            if route != nil, lastTakenBeatSentAt != nil { outage = true }
            return
        }
        if outage {
            outage = false
            onBackAfterOutage?()
        }
        let sentAt = MonotonicClock.now
        let arguments = Self.beat.arguments([
            "nodes": keys.nodes, "node": nodeId, "nodeKey": keys.node(nodeId), "timeoutMs": timeoutMs,
            "meta": keys.meta, "deadMark": keys.deadMark(of: nodeId), "since": latestTakenBeatTime.map { max(0, $0 - timeoutMs) } ?? 0,
        ])
        route.run(Self.beat, arguments: arguments) { [weak self] result in
            guard let self else { return }
            slowestBeatMs = max(slowestBeatMs, MonotonicClock.now - sentAt)
            if case .failure(let error) = result {
                if error.code == .errorReply { answeredError = error.message } else if lastTakenBeatSentAt != nil { outage = true }
            }
            guard case .success(let reply) = result, let elements = reply.elements,
                  let count = elements.first?.integer else { return }
            answeredError = nil
            lastTakenBeatSentAt = max(lastTakenBeatSentAt ?? sentAt, sentAt)
            let time = elements.count > 3 ? elements[3].integer : nil
            if let time { latestTakenBeatTime = max(latestTakenBeatTime ?? time, time) }
            let markedDead = elements.count > 2 && elements[2].integer == 2
            let readded = elements.count > 2 && elements[2].integer == 1 && beats > 0
            beats += 1
            if !markedDead, let time, elements.count > 4, let pairs = elements[4].elements {
                var ages: [String: Int64] = [:]
                for index in stride(from: 0, to: pairs.count - 1, by: 2) {
                    if let node = pairs[index].text, let age = pairs[index + 1].integer { ages[node] = age }
                }
                onLive?(StoreBeat(liveAt: time, beatAges: ages))
            }
            onBeat?(Int(count), elements.count > 1 ? elements[1].text : nil, readded || markedDead)
            if markedDead { revive(on: route) }
        }
    }

    /// Puts the node back among the live nodes once ``onBeat`` has told it that it was
    /// declared dead (and it fenced itself there).
    private func revive(on route: StoreRoute) {
        let arguments = Self.revive.arguments([
            "nodes": keys.nodes, "node": nodeId, "nodeKey": keys.node(nodeId), "deadMark": keys.deadMark(of: nodeId),
            "reaping": keys.reaping,
        ])
        // Should this fail (or find the node still being reaped), the next beat answers "dead"
        // again and the node revives then. Revived, it beats at once: the node refuses logins
        // until a beat finds it live (``ClusterLink``), so it does not wait a heartbeat more.
        route.run(Self.revive, arguments: arguments) { [weak self] result in
            guard case .success(let reply) = result, reply.text == "ok" else { return }
            self?.beatNow()
        }
    }
}
