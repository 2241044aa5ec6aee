import Logging
import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// The transport's half of cluster mode (PROTOCOL §9): runs the core's store commands on
/// Redis and feeds the answers back as events, on the service thread's libev loop — no
/// thread, no lock. On one Redis (a server, Sentinel, TLS) one connection carries commands
/// and one pub/sub (``RedisSubscriber``); on a Redis Cluster the store calls, the heartbeat
/// and the webhook taker go through a ``RedisClusterClient``, routed by their keys
/// (``StoreRoute``), and the channels are heard with sharded pub/sub
/// (``RedisShardedSubscriber``): docs/cluster.md, "The link on Redis Cluster".
///
/// ```swift
/// let link = try ClusterLink(configuration: configuration, nodeId: id, loop: eventLoop, logger: logger)
/// link.deliver = { event in server.feed(event) }        // replies, pub/sub messages
/// link.start()
/// link.perform(action)                                  // .store / .listen / .unlisten
/// ```
public final class ClusterLink {
    /// The Redis the cluster shares (`cluster.redis`): one server, or the master behind Sentinel.
    public let target: RedisTarget
    /// This node's id.
    public let nodeId: String
    /// Where replies and pub/sub messages go, as the core's events.
    public var deliver: ((InboundEvent) -> Void)?
    /// Nodes seen alive at the last heartbeat, this one included (`rollcall_cluster_nodes`).
    public private(set) var liveNodes = 0
    /// Times the command link came back at another address than before: a Sentinel failover,
    /// or a host name that now resolves elsewhere (`rollcall_redis_master_changes_total`).
    public private(set) var redisAddressChanges = 0
    /// Times this node found the cluster's data lost or rolled back and closed every session
    /// with 1012 (`rollcall_cluster_data_losses_total`).
    public private(set) var dataLosses = 0
    /// Times the command link went down (a timeout, a reset, Redis gone).
    public private(set) var commandLinkLosses = 0
    /// Store calls given up unsent after waiting ``StoreCallGate/maxWaitSeconds`` for room on
    /// the command link (answered `UNAVAILABLE`).
    public private(set) var callsGivenUp = 0
    /// The address the command link was last connected to.
    private var lastAddress: RedisHostPort?
    /// On Redis Cluster, the masters of the last slot map.
    private var lastMasters: Set<RedisHostPort>?
    /// Commands of store calls on the command link at most; the rest wait in the node
    /// (``StoreCallGate``). Small enough that the heartbeat, sent straight to the link, waits
    /// behind a few milliseconds of Redis' work at most, large enough to keep the link busy.
    public static let maxCommandsInFlight = 128
    /// Store calls waiting for room on the command link, and the commands on it.
    private var gate: StoreCallGate
    private var giveUpTimer: LoopTimer!
    private var admitting = false
    /// Slow store calls are logged once a second at most (``noteIfSlow``).
    private var slowCallLog = RateLimitedLog(intervalMs: 1000)
    /// "Not now" answers (`NOREPLICAS`, `READONLY`, `OOM`…) and refused commands, logged at
    /// most once a second each: while a master refuses writes every call fails, the reaper's
    /// passes among them (hundreds a second), and a line per failure filled the log (stop 48:
    /// the node logs of a failed short Redis Cluster chaos schedule in CI showed nothing else).
    private var notNowLog = RateLimitedLog(intervalMs: 1000)
    private var refusedLog = RateLimitedLog(intervalMs: 1000)
    /// A beat said this node was declared dead, and none since found it live.
    private var fencedUntilLive = false

    let configuration: Configuration
    let logger: Logger
    /// Where store calls go.
    let route: StoreRoute
    /// How channels are heard.
    let subscriber: EventSubscription
    /// The Redis Cluster client, on Redis Cluster.
    var clusterClient: RedisClusterClient? {
        if case .cluster(let client, _) = route { client } else { nil }
    }
    /// On one Redis, the one connection every command goes on (the route's).
    private var connection: RedisConnection? {
        if case .connection(let connection) = route { connection } else { nil }
    }
    let heartbeat: NodeHeartbeat
    /// Beats into each master's share of the key groups, to notice one master's loss (``GroupBeat``).
    private let groupBeat: GroupBeat
    /// A renewal of the epoch for a group's loss is on its way (``groupLost(_:stored:)``).
    private var renewingForGroup = false
    /// The channels subscribed at least once on Redis Cluster: a (re)subscription that names
    /// one of them follows a loss (a failover, a slot move, a reconnect).
    private var heardOnce: Set<[UInt8]> = []
    /// Pub/sub messages held back while this node may have been declared dead.
    private var heldBack = HeldBackMessages()
    /// The scripts run so far, by name (unique: LuaScriptTests): hashing a name is cheap, hashing
    /// a whole Lua source on every call cost a tenth of a node's CPU per op (BENCHMARKS.md, issue 28).
    private var scripts: [String: RedisScript] = [:]
    /// With more than one key group: the groups whose webhook streams this node's scripts may
    /// have written to lately (``WebhookStreamGroups``), for its ``WebhookStream``; nil with one
    /// group, whose one stream the taker always reads.
    public let webhookGroups: WebhookStreamGroups?
    /// Tests only: run the core's scripts under ``SlotAudit``, which marks in Redis each script
    /// that touches keys of two Redis Cluster slots and changes nothing else (docs/cluster.md,
    /// "Where the build stands"). Set before the first call.
    package var auditsSlots = false
    private var subscribedOnce = false
    private var hadOutage = false
    /// True once both links have been connected at least once (the node has joined).
    private var connectedOnce = false
    /// True from Redis losing the cluster's data until the node is registered again.
    private var rejoining = false
    /// A registration after ``dataLost()`` is on its way.
    private var registering = false

    /// A link for `configuration.cluster` on `loop`. Throws ``ClusterError`` for a bad `cluster.redis`.
    /// The cluster's epoch when this node joined (`P meta`); a different or missing one
    /// means Redis lost the cluster's data.
    public private(set) var epoch: String?

    public init(configuration: Configuration, nodeId: String, epoch: String?, loop: EventLoop, logger: Logger) throws(ClusterError) {
        self.epoch = epoch
        target = try Self.target(of: configuration)
        self.configuration = configuration
        webhookGroups = KeyGroups(for: configuration).count > 1 ? WebhookStreamGroups(prefix: configuration.cluster.keyPrefix) : nil
        self.nodeId = nodeId
        self.logger = logger
        let timings = ClusterLink.timings(configuration.cluster)
        gate = StoreCallGate(maxCommandsInFlight: Self.maxCommandsInFlight, maxWaitSeconds: timings.timeoutSeconds)
        let tls = try Self.tlsContext(of: configuration)
        let probes = configuration.cluster.keyPrefix + "probe:"
        if case .cluster(let seeds) = target {
            let client = RedisClusterClient(seeds: seeds, loop: loop, timings: timings, clientName: "rollcall:" + nodeId, tls: tls)
            // One key group: every key is in the control tag's slot, so a script that names its
            // keys itself (declaring none) goes there (StoreRoute).
            let keyless = KeyGroups(for: configuration).count == 1 ? ClusterKeys.controlTag(prefix: configuration.cluster.keyPrefix) : nil
            route = .cluster(client, keyless: keyless.map { Array($0.utf8) })
            subscriber = .sharded(RedisShardedSubscriber(client: client, loop: loop, probeChannelPrefix: probes, timings: timings))
        } else {
            let connection = RedisConnection(target: target, loop: loop, timings: timings, clientName: "rollcall:" + nodeId, tls: tls)
            route = .connection(connection)
            subscriber = .plain(RedisSubscriber(loop: loop, publisher: connection, probeChannelPrefix: probes, timings: timings))
        }
        heartbeat = NodeHeartbeat(configuration: configuration, nodeId: nodeId, loop: loop)
        groupBeat = GroupBeat(configuration: configuration, nodeId: nodeId)
        giveUpTimer = LoopTimer(loop: loop) { [unowned self] in admit() }
    }

    /// What `cluster.redis` names (one server, Sentinel, or Redis Cluster, each with or without
    /// TLS); throws ``ClusterError`` (``ClusterError/Code/invalidConfiguration``) naming
    /// `cluster.redis` when it is null or malformed. `rollcall --check-config` runs it too.
    public static func target(of configuration: Configuration) throws(ClusterError) -> RedisTarget {
        guard let url = configuration.cluster.redis else { throw ClusterError(.notClustered, "cluster.redis is null") }
        let target: RedisTarget
        do {
            target = try RedisTarget(parsing: url)
        } catch {
            throw ClusterError(.invalidConfiguration, "cluster.redis: \((error as? RedisError)?.message ?? "\(error)")")
        }
        return target
    }

    /// The loaded `cluster.tls` for a `rediss` target (nil for a plain one); throws
    /// ``ClusterError`` (``ClusterError/Code/invalidConfiguration``) naming the `cluster.tls` key
    /// whose file cannot be read or does not load. `rollcall --check-config` runs it too.
    public static func tlsContext(of configuration: Configuration) throws(ClusterError) -> RedisTLSContext? {
        guard let url = configuration.cluster.redis, let target = try? RedisTarget(parsing: url), target.usesTLS else { return nil }
        let tls = configuration.cluster.tls
        do {
            return try RedisTLSContext(settings: RedisTLSSettings(
                caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile, serverName: tls.serverName))
        } catch {
            throw ClusterError(.invalidConfiguration, (error as? RedisError)?.message ?? "cluster.tls: \(error)")
        }
    }

    /// The Redis client's timings for a cluster section: an outage is noticed within
    /// `nodeTimeoutSeconds` (watchdog plus subscriber probe, docs/cluster.md), and a node is
    /// back within a quarter of `nodeTimeoutSeconds` (at most 2 s) of Redis answering again —
    /// of a new master being named, after a Sentinel failover — so it beats well inside the
    /// grace window the first node back opens (PROTOCOL §9).
    static func timings(_ cluster: Configuration.Cluster) -> RedisTimings {
        let probe = max(0.05, min(1, cluster.nodeTimeoutSeconds / 4))
        return RedisTimings(timeoutSeconds: max(0.1, cluster.nodeTimeoutSeconds - probe),
                            maxBackoffSeconds: min(2, max(0.05, cluster.nodeTimeoutSeconds / 4)), probeIntervalSeconds: probe)
    }

    /// True while both connections are up (on Redis Cluster: a connection to every master of
    /// the slot map, and every channel subscribed on a live link).
    public var isConnected: Bool {
        if let client = clusterClient { return client.isReady && subscriber.isUp }
        return connection?.state.isConnected == true && subscriber.isUp
    }

    /// The `/readyz` reason while this node cannot serve what needs Redis (nil while it can):
    /// not joined yet (its links never connected), Redis unreachable, Redis answering the
    /// heartbeat with an error, or joining again after Redis lost the cluster's data.
    public var healthProblem: String? {
        guard case .plain(let subscriber) = subscriber, let commands = connection else { return clusterHealthProblem }
        if !connectedOnce {
            let why = if case .disconnected(let error) = commands.state, error.code != .unavailable { ": \(error)" } else { "" }
            return "cluster: not joined yet (connecting to Redis at \(target)\(why))"
        }
        if case .disconnected(let error) = commands.state { return "cluster: Redis unreachable (\(error))" }
        if case .disconnected(let error) = subscriber.state { return "cluster: Redis pub/sub unreachable (\(error))" }
        if let error = heartbeat.answeredError { return "cluster: Redis answers errors (\(error))" }
        if rejoining { return "cluster: joining again (Redis lost the cluster's data)" }
        return nil
    }

    /// The latest TLS failure logged, so that a retry failing the same way logs nothing new.
    private var loggedTLSFailure: String?

    /// ``healthProblem`` on Redis Cluster: the client's map and connections, and the sharded links.
    private var clusterHealthProblem: String? {
        guard let client = clusterClient else { return nil }
        let why = client.lastRefreshError.map { ": \($0)" } ?? ""
        if !connectedOnce, client.isReady, subscriber.isUp { connectedOnce = true }
        if !connectedOnce { return "cluster: not joined yet (connecting to Redis Cluster at \(target)\(why))" }
        if !client.isReady { return "cluster: Redis Cluster unreachable (a master or the slot map is missing\(why))" }
        if !subscriber.isUp { return "cluster: Redis Cluster pub/sub unreachable (a shard link is down)" }
        if let error = heartbeat.answeredError { return "cluster: Redis Cluster answers errors (\(error))" }
        if rejoining { return "cluster: joining again (Redis Cluster lost the cluster's data)" }
        return nil
    }

    /// Connects the links and starts the heartbeat.
    public func start() {
        subscriber.subscribe(Array(ClusterKeys.controlChannel(prefix: configuration.cluster.keyPrefix, node: nodeId).utf8))
        subscriber.onMessage { [weak self] channel, payload in
            self?.received(channel: channel, payload: payload)
        }
        switch subscriber {
        case .plain(let plain):
            plain.onSubscribed = { [weak self] channel in self?.deliver?(.storeListening([channel])) }
            plain.onResubscribed = { [weak self] in
                guard let self else { return }
                // After the first subscription nothing can have been missed; after a loss, maybe.
                if subscribedOnce { deliver?(.storeResubscribed) }
                subscribedOnce = true
            }
        case .sharded(let sharded):
            sharded.onResubscribed = { [weak self] channels in
                guard let self else { return }
                // A channel subscribed before may have missed messages; one heard for the
                // first time (just listened to) cannot have.
                let again = !channels.isDisjoint(with: heardOnce)
                heardOnce.formUnion(channels)
                deliver?(.storeListening(Array(channels)))
                if again { deliver?(.storeResubscribed) }
            }
        }
        guard case .plain(let plain) = subscriber, let connection else {
            clusterClient?.onMapChange = { [weak self] map in self?.mapChanged(map) }
            clusterClient?.start()
            subscriber.start()
            heartbeat.onBackAfterOutage = { [weak self] in self?.markGrace() }
            startHeartbeat()
            return
        }
        start(plain, on: connection)
    }

    /// ``start()`` on one Redis: `commands` is the route's connection (the handlers set on it
    /// read it back through `self`, holding no reference of their own).
    private func start(_ subscriber: RedisSubscriber, on commands: RedisConnection) {
        commands.onLinkFailure = { [weak self] error in
            guard let self, error.code == .tlsVerifyFailed || error.code == .tlsHandshakeFailed else { return }
            guard loggedTLSFailure != error.message else { return }
            loggedTLSFailure = error.message
            logger.error("cluster: TLS to Redis refused", metadata: ["code": "\(error.code.rawValue)", "error": "\(error.message)"])
        }
        commands.onStateChange = { [weak self] state in
            guard let self else { return }
            switch state {
            case .connected:
                let address = connection?.address?.address
                logger.info("cluster: Redis connected", metadata: ["redis": "\(target)", "address": "\(address.map { "\($0)" } ?? "?")"])
                if let lastAddress, let address, address != lastAddress {
                    redisAddressChanges += 1
                    logger.warning("cluster: Redis is now at another address", metadata: ["from": "\(lastAddress)", "to": "\(address)"])
                }
                lastAddress = address ?? lastAddress
                loggedTLSFailure = nil
                if self.subscriber.isUp { connectedOnce = true }
                // Back from an outage: open the grace window if nobody could write, then beat
                // at once rather than at the next tick, since the window is measured from the first node back.
                if hadOutage {
                    markGrace()
                    heartbeat.beatNow()
                }
            case .disconnected(let error):
                hadOutage = true
                commandLinkLosses += 1
                logger.warning("cluster: Redis unreachable", metadata: ["error": "\(error)"])
            }
        }
        subscriber.onStateChange = { [weak self] state in
            guard let self, state.isConnected, connection?.state.isConnected == true else { return }
            connectedOnce = true
        }
        commands.start()
        subscriber.start()
        startHeartbeat()
    }

    /// Beats every `heartbeatSeconds` through the route (on Redis Cluster, to the master of the
    /// control tag's slot) and acts on what each beat says: Redis lost the cluster's data, this
    /// node was declared dead, or it is alive (what pub/sub held back goes out).
    private func startHeartbeat() {
        heartbeat.onBeat = { [weak self] count, epoch, declaredDead in
            guard let self else { return }
            liveNodes = count
            if self.epoch != nil, epoch != self.epoch {
                heldBack.discard()
                dataLost(renewedAs: epoch.flatMap { $0.hasPrefix("renewed-") ? $0 : nil })
            } else if rejoining {
                // Registering again failed (or another node's registration made the epoch):
                // tried again at each beat until it succeeds.
                registerAgain()
            } else if declaredDead {
                // Each beat until the revival says "dead" again and fences what may have
                // slipped in meanwhile (a login answered as the first one came); logged once.
                if !fencedUntilLive {
                    logger.error("cluster: the other nodes declared this node dead (it was silent too long); its sessions were handed over; it refuses logins until it is back among the live nodes")
                }
                fencedUntilLive = true
                deliver?(.storeFenced)
                let dropped = heldBack.discard()
                if dropped > 0 { logger.warning("cluster: \(dropped) pub/sub message(s) held back while this node may have been dead were dropped: its sessions were handed over (held ones keep their messages in Redis)") }
            } else if !heartbeat.mayBeDeclaredDead(now: MonotonicClock.now) {
                // Only a beat sent since the node woke says it is alive: the answer to one sent
                // before it stopped may wait in the socket, and says nothing about now.
                releaseHeldBack()
                groupBeat.beat(groupBeat.groups(on: clusterClient?.map), on: route) { [weak self] group, stored in
                    self?.groupLost(group, stored: stored)
                }
            }
        }
        heartbeat.onLive = { [weak self] beat in
            guard let self else { return }
            if fencedUntilLive { logger.notice("cluster: this node is back among the live nodes") }
            fencedUntilLive = false
            deliver?(.storeBeat(beat))
        }
        heartbeat.start(on: route)
    }

    /// On Redis Cluster: the slot map changed. A change of the masters after the first map (a
    /// failover, a master added or removed) counts as a master change
    /// (`rollcall_redis_master_changes_total`), as a new address does on one Redis.
    private func mapChanged(_ map: RedisClusterSlotMap) {
        let masters = Set(map.masters)
        defer { lastMasters = masters }
        guard let lastMasters, lastMasters != masters else { return }
        redisAddressChanges += 1
        logger.warning("cluster: the Redis Cluster's masters changed", metadata: [
            "from": "\(lastMasters.map { "\($0)" }.sorted())", "to": "\(masters.map { "\($0)" }.sorted())",
        ])
    }

    /// A pub/sub message from Redis. While this node may have been declared dead (no beat of
    /// it was taken for `nodeTimeoutSeconds`: it was paused, or its command link stalled), it
    /// is held back and a beat is sent at once: when the beat says the node was declared dead,
    /// its sessions were handed over (a held one keeps its messages in Redis and gets them at
    /// its resume), so what was held back is dropped rather than delivered twice; otherwise it
    /// is delivered, in order.
    private func received(channel: [UInt8], payload: [UInt8]) {
        if heldBack.isEmpty, !heartbeat.mayBeDeclaredDead(now: MonotonicClock.now) {
            deliver?(.storeMessage(channel: channel, payload: payload))
            return
        }
        if heldBack.isEmpty {
            logger.warning("cluster: no heartbeat of this node reached Redis for nodeTimeoutSeconds; pub/sub messages wait until a beat says whether it was declared dead")
            heartbeat.beatNow()
        }
        heldBack.append(channel: channel, payload: payload)
    }

    /// The beat said this node is alive: what was held back goes out, in order. When more
    /// arrived than the holding bound, the node resubscribes' way (each channel's `seq`
    /// compared, snapshots where they differ) stands in for the dropped presence events.
    private func releaseHeldBack() {
        guard !heldBack.isEmpty else { return }
        let (messages, overflowed) = heldBack.take()
        for (channel, payload) in messages { deliver?(.storeMessage(channel: channel, payload: payload)) }
        if overflowed { deliver?(.storeResubscribed) }
    }

    /// Carries out one of the core's cluster actions; other actions are not this link's.
    public func perform(_ action: Action) {
        switch action {
        case .store(let ticket, let list, let priority):
            run(list, ticket: ticket, priority: priority)
        case .listen(let channel):
            subscriber.subscribe(channel)
        case .unlisten(let channel):
            subscriber.unsubscribe(channel)
            heardOnce.remove(channel)
        default:
            break
        }
    }

    /// Opens a grace window in `meta` when no node has beaten for `silenceMs`; answers 1 when it did.
    private static let graceScript = LuaScript("cluster.markGrace", parameters: [.key("meta"), .number("silenceMs")], body: """
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
        if redis.call('HEXISTS', meta, 'epoch') == 0 then return 0 end
        local last = tonumber(redis.call('HGET', meta, 'lastBeat') or '0')
        if now - last < silenceMs then return 0 end
        redis.call('HSET', meta, 'grace', now)
        return 1
        """)

    /// Back after an outage of Redis itself: every node gets a full `nodeTimeoutSeconds` to
    /// heartbeat again before anyone is declared dead (the reaper measures from `P meta`
    /// `grace`). Only when no node has beaten for 1.5 × `heartbeatSeconds` (`P meta lastBeat`):
    /// then nobody could write, so Redis was out. A node that lost its link alone, while the
    /// others kept beating, grants none (PROTOCOL §9, 1.2): a flapping node would otherwise
    /// pause dead-node detection for the whole cluster.
    private func markGrace() {
        let silenceMs = Int64((configuration.cluster.heartbeatSeconds * 1500).rounded())
        let arguments = Self.graceScript.arguments(["meta": ClusterKeys(prefix: configuration.cluster.keyPrefix).meta, "silenceMs": silenceMs])
        route.run(Self.graceScript, arguments: arguments) { [logger] result in
            if case .success(.integer(1)) = result { logger.info("cluster: no node beat while Redis was out of reach; every node gets a grace window") }
        }
    }

    /// A group beat found that the master of key group `group` lost this node's earlier beats
    /// there (``GroupBeat``): that master lost more than a node timeout of acknowledged writes.
    /// The node renews the cluster's epoch (unless another node did first) and beats at once:
    /// the beat finds the new epoch, and every node, this one too, handles the loss
    /// (``dataLost(renewedAs:)``).
    private func groupLost(_ group: Int, stored: Int64) {
        guard !renewingForGroup, let epoch else { return }
        renewingForGroup = true
        logger.error("cluster: Redis lost the writes of a key group (its master failed over to a replica that lacked more than nodeTimeoutSeconds of them, or restarted empty); renewing the cluster's epoch: every session closes with 1012, as after a data loss",
                     metadata: ["group": "\(group)", "lastBeatThere": "\(stored)"])
        groupBeat.renewEpoch(from: epoch, on: route) { [weak self] in
            guard let self else { return }
            renewingForGroup = false
            heartbeat.beatNow()
        }
    }

    /// Redis lost the cluster's data (restarted empty), or went back in time (a beat found
    /// it and renewed the epoch, `renewed`: ``NodeHeartbeat/beat``; or a group beat found one
    /// master's share gone and renewed it: ``groupLost(_:stored:)``): every local session is
    /// closed with 1012 and the node registers again (PROTOCOL §9). After a renewal the
    /// registration hands over the sessions Redis still lists for this node, their resume
    /// tokens forgotten.
    private func dataLost(renewedAs renewed: String? = nil) {
        dataLosses += 1
        if let renewed {
            logger.error("cluster: Redis went back in time (a failover to a replica that lacked this node's last beats, so writes Redis had acknowledged are gone); closing every session with 1012, as after a data loss",
                         metadata: ["epoch": "\(epoch ?? "none")", "renewed": "\(renewed)"])
        } else {
            logger.error("cluster: Redis lost the cluster's data; closing every session with 1012", metadata: ["epoch": "\(epoch ?? "none")"])
        }
        deliver?(.storeLost)
        groupBeat.forget()
        epoch = nil
        rejoining = true
        registerAgain()
    }

    /// Registers this node in the cluster Redis has now (after ``dataLost()``); one attempt
    /// at a time, again at the next beat when it failed.
    private func registerAgain() {
        guard !registering else { return }
        registering = true
        ClusterStartCheck.registerAgain(configuration: configuration, nodeId: nodeId, on: route) { [weak self] result in
            guard let self else { return }
            registering = false
            switch result {
            case .success(let epoch):
                self.epoch = epoch
                rejoining = false
            case .failure(let error):
                logger.error("cluster: could not register again; trying again at the next beat", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Stops heartbeats and closes both connections.
    public func close() {
        heartbeat.stop()
        giveUpTimer.cancel()
        _ = gate.drain()
        subscriber.close()
        route.close()
    }

    /// Queues a store call behind the ones already waiting in its lane (``StoreCallGate``) and
    /// sends what the command link has room for.
    private func run(_ list: [StoreCommand], ticket: StoreTicket, priority: StoreCallPriority) {
        guard !list.isEmpty else {
            deliver?(.storeReplied(ticket, .success([])))
            return
        }
        gate.enqueue(ticket, list, priority: priority, now: Self.clockSeconds)
        admit()
    }

    /// Sends waiting store calls while the link has room, in order, and answers `UNAVAILABLE`
    /// (unsent: nothing changed) those that waited past the gate's bound; then sets the timer
    /// for the next one to give up. Not re-entered: a reply delivered from here may queue more.
    private func admit() {
        guard !admitting else { return }
        admitting = true
        defer { admitting = false }
        while let decision = gate.next(now: Self.clockSeconds) {
            switch decision {
            case .send(let call):
                send(call.commands, ticket: call.ticket)
            case .giveUp(let call):
                callsGivenUp += 1
                deliver?(.storeReplied(call.ticket, .failure(StoreFailure(busyFor: gate.maxWaitSeconds, waiting: gate.waitingCount))))
            }
        }
        if let due = gate.nextGiveUp { giveUpTimer.schedule(after: max(0.001, due - Self.clockSeconds)) } else { giveUpTimer.cancel() }
    }

    /// The monotonic clock in seconds, read now: not the loop's cached time, which stands
    /// still while one turn handles a burst (the calls queued late in it waited less).
    private static var clockSeconds: Double { Double(MonotonicClock.now) / 1000 }

    /// Sends every command at once (they run in order on one connection; on Redis Cluster, in
    /// order per slot) and answers the ticket when the last reply is in, or at the first failure.
    private func send(_ list: [StoreCommand], ticket: StoreTicket) {
        var replies = [StoreReply?](repeating: nil, count: list.count)
        var remaining = list.count
        var failed = false
        let sentAt = MonotonicClock.now
        for (index, command) in list.enumerated() {
            let completion: RedisConnection.Completion = { [weak self] result in
                guard let self else { return }
                gate.answered()
                defer { if gate.waitingCount > 0 { admit() } }
                guard !failed else { return }
                noteIfSlow(command, sentAt: sentAt, result: result)
                switch result {
                case .success(let reply):
                    replies[index] = StoreReply(reply)
                case .failure(let error) where error.isNotNow:
                    // Redis says "not now" (OOM, BUSY, LOADING, READONLY…): the request is
                    // answered UNAVAILABLE with a retry hint, never INTERNAL (PROTOCOL §9).
                    if let suppressed = notNowLog.allow(now: MonotonicClock.now) {
                        logger.warning("cluster: Redis is not taking commands now", metadata: ["error": "\(error.message)", "similarSuppressed": "\(suppressed)"])
                    }
                    failed = true
                    deliver?(.storeReplied(ticket, .failure(StoreFailure(notNow: error))))
                    return
                case .failure(let error) where error.code == .noKey || error.code == .crossSlot:
                    // Not routable on Redis Cluster: nothing was sent, and a retry cannot help.
                    logger.error("cluster: a store call cannot be routed", metadata: ["error": "\(error.message)"])
                    failed = true
                    deliver?(.storeReplied(ticket, .failure(StoreFailure(.internal, "the cluster store cannot route this call (\(error.code.rawValue))"))))
                    return
                case .failure(let error) where error.code == .errorReply:
                    if let suppressed = refusedLog.allow(now: MonotonicClock.now) {
                        logger.error("cluster: Redis refused a command", metadata: ["error": "\(error.message)", "similarSuppressed": "\(suppressed)"])
                    }
                    replies[index] = .error(error.message)
                case .failure(let error):
                    failed = true
                    deliver?(.storeReplied(ticket, .failure(StoreFailure(error))))
                    return
                }
                remaining -= 1
                if remaining == 0 { deliver?(.storeReplied(ticket, .success(replies.map { $0 ?? .null }))) }
            }
            if let webhookGroups, case .script(let script, let arguments) = command {
                webhookGroups.markStreams(among: arguments.prefix(script.keyCount))
            }
            route.send(command, as: redisScript, completion: completion)
        }
    }

    /// Logs a command Redis took longer than ``slowCallMs`` to answer (or to fail), at most
    /// once a second: what a request waited on when a client saw it time out (a master that
    /// stalls, a link the watchdog takes down). The rest of such a second is counted in the next line.
    private func noteIfSlow(_ command: StoreCommand, sentAt: Int64, result: Result<RedisReply, RedisError>) {
        let now = MonotonicClock.now
        let waited = now - sentAt
        guard waited >= Self.slowCallMs, let unlogged = slowCallLog.allow(now: now) else { return }
        let what: String
        switch command {
        case .script(let script, let arguments):
            what = script.name + " " + (arguments.first.map { String(decoding: $0, as: UTF8.self) } ?? "")
        case .command(let words):
            what = words.prefix(2).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
        }
        let outcome: String
        switch result {
        case .success: outcome = "answered"
        case .failure(let error): outcome = "\(error.code.rawValue): \(error.message)"
        }
        logger.warning("cluster: a store call waited long for Redis", metadata: [
            "call": "\(what)", "waitedMs": "\(waited)", "outcome": "\(outcome)", "alsoSlowSinceLastLine": "\(unlogged)",
        ])
    }

    /// A store command answered later than this (ms) is logged (``noteIfSlow``).
    static let slowCallMs: Int64 = 1000

    /// The script with its SHA-1, made once per script (the connection loads it on each new
    /// link before its first `EVALSHA`: ``RedisConnection/load(_:)``).
    private func redisScript(_ script: StoreScript) -> RedisScript {
        if let cached = scripts[script.name] {
            assert(cached.source == source(of: script), "two scripts are named \(script.name)")
            return cached
        }
        let made = RedisScript(source(of: script))
        scripts[script.name] = made
        return made
    }

    /// A script's source as this link runs it: the publish command's prelude
    /// (``EventPublishing``), under ``SlotAudit`` with ``auditsSlots``.
    private func source(of script: StoreScript) -> String {
        let publishing = EventPublishing.prelude(sharded: clusterClient != nil) + script.source
        return auditsSlots ? SlotAudit.prelude(scriptName: script.name) + publishing : publishing
    }
}

extension StoreReply {
    /// The core's copy of a Redis reply.
    init(_ reply: RedisReply) {
        switch reply {
        case .status(let text): self = .status(text)
        case .error(let text): self = .error(text)
        case .integer(let value): self = .integer(value)
        case .bulk(let bytes): self = .bulk(bytes)
        case .array(let elements): self = .array(elements.map(StoreReply.init))
        case .null: self = .null
        }
    }
}

extension StoreFailure {
    /// What a request that needed Redis is answered when the link failed: `UNAVAILABLE`
    /// with `retryAfterMs` (PROTOCOL §9).
    init(_ error: RedisError) {
        self.init(.unavailable, "the cluster store is unreachable (\(error.code.rawValue))", retryAfterMs: error.retryAfterMs ?? 1000)
    }

    /// False when the call never left this node: the link was down when it was sent
    /// (`REDIS_UNAVAILABLE`), so Redis cannot run it later. True for every other failure — a
    /// timeout or a link lost with the call sent may still see it run.
    var mayHaveReachedRedis: Bool { !message.hasSuffix("(\(RedisError.Code.unavailable.rawValue))") }

    /// What a store call is answered when it waited `seconds` in the node without room on the
    /// command link (``StoreCallGate``): `UNAVAILABLE`, never sent (so the suffix of
    /// ``mayHaveReachedRedis`` is false), retried after about as long as it waited.
    init(busyFor seconds: Double, waiting: Int) {
        let waited = (seconds * 100).rounded() / 100
        self.init(.unavailable, "this node's link to the cluster store is busy: the call waited \(waited) s behind \(waiting) other(s) (\(RedisError.Code.unavailable.rawValue))",
                  retryAfterMs: max(100, Int((seconds * 1000).rounded())))
    }

    /// What a request is answered when Redis said "not now" (``RedisError/isNotNow``):
    /// `UNAVAILABLE`, retried after half a second, naming what Redis said.
    init(notNow error: RedisError) {
        let word = error.message.prefix { $0 != " " }
        self.init(.unavailable, "the cluster store is not taking commands now (\(word))", retryAfterMs: Self.notNowRetryMs)
    }

    /// The `retryAfterMs` of a "not now" answer.
    static let notNowRetryMs = 500
}
