import RollcallEventLoop

/// Commands to a Redis Cluster (``RedisTarget/cluster(_:)``), each routed to the master that
/// serves its keys' slot, on the loop's thread:
///
/// - The slot map comes from `CLUSTER SLOTS`, asked of a connected master, else of the seeds in
///   turn (``RedisClusterMapSource``), each step bounded by ``RedisTimings/timeoutSeconds``;
///   host names are resolved off the loop by the connections themselves (``RedisLocator``).
/// - One ``RedisConnection`` per master (its `AUTH`, watchdog, reconnects and script loading);
///   a connection to an address that no longer serves any slot is closed.
/// - Every key of one command must hash to one slot (``RedisClusterSlot``), or the command is
///   refused with ``RedisError/Code/crossSlot`` before anything is sent.
/// - `-MOVED`: the slot's new master is recorded, the map refreshed, and the command sent once
///   more to the named node. `-ASK`: `ASKING` and the command go once to the named node.
/// - `-TRYAGAIN`, `-CLUSTERDOWN`, a master that is down or lost with the command in flight, a
///   slot with no master, a second redirection: ``RedisError/Code/unavailable`` (or the
///   connection's own ``RedisError/Code/connectionLost`` / ``RedisError/Code/timeout``) with
///   a `retryAfterMs` hint, never an error reply; the map is refreshed with backoff until
///   every master it names answers, so a failover is followed with no restart.
/// - Completions run in send order per slot, redirections included.
/// - `rediss+cluster://` (``RedisClusterSeeds/tls``): every link (seeds, masters, and the
///   ``RedisShardedSubscriber``'s) speaks TLS with one ``tls`` configuration, each checking the
///   host as the URL or the slot map names it unless `serverName` is set.
public final class RedisClusterClient {
    /// A command's outcome (as ``RedisConnection/Completion``).
    public typealias Completion = RedisConnection.Completion

    /// The seed nodes and credentials (`cluster.redis`).
    public let seeds: RedisClusterSeeds
    /// Timeout and backoff of every connection and of the map's refreshes.
    public let timings: RedisTimings
    /// The name each connection gives itself (`CLIENT SETNAME`).
    public let clientName: String?
    /// The TLS configuration every link uses for `rediss+cluster://` (nil: plain links, or the
    /// system's CA store could not be loaded — each link then reports why it cannot connect).
    public let tls: RedisTLSContext?
    /// Why the last refresh of the slot map failed (each node asked and its answer, e.g. a
    /// certificate that does not verify); nil once a refresh succeeded.
    public private(set) var lastRefreshError: RedisError?
    /// The slot map in use; nil until a node first answered `CLUSTER SLOTS`.
    public private(set) var map: RedisClusterSlotMap?
    /// Called after each map refresh that changed the map (and after a `MOVED` changed it).
    public var onMapChange: ((RedisClusterSlotMap) -> Void)?

    /// True when the map covers every slot and every master's connection is up.
    public var isReady: Bool {
        guard let map, map.coversEverySlot else { return false }
        return map.masters.allSatisfy { connections[$0]?.state.isConnected == true }
    }

    /// The masters whose connection is up now.
    public var connectedMasters: [RedisHostPort] {
        (map?.masters ?? []).filter { connections[$0]?.state.isConnected == true }
    }

    /// The connection to `master` (one of ``RedisClusterSlotMap/masters``), for what is not
    /// routed by a key (e.g. a scan of every master); nil for an address not in the map.
    public func connection(toMaster master: RedisHostPort) -> RedisConnection? {
        map?.masters.contains(master) == true ? connections[master] : nil
    }

    private let loop: EventLoop
    private var connections: [RedisHostPort: RedisConnection] = [:]
    private var source: RedisClusterMapSource!
    private var refreshTimer: LoopTimer!
    private var refreshBackoff: Backoff
    private var refreshing = false
    private let order = RedisClusterReplyOrder()
    private var isClosed = false

    /// How a routed command is sent on the connection it goes to (`asking`: preceded by `ASKING`).
    private typealias Perform = (_ connection: RedisConnection, _ asking: Bool, _ completion: @escaping Completion) -> Void

    /// A client for the cluster `seeds` name, on `loop`; nothing happens until ``start()``.
    /// With `rediss+cluster://` every link uses `tls` (`cluster.tls`), or the system's CA store
    /// when it is nil; `tls` is ignored for a plain cluster.
    public init(seeds: RedisClusterSeeds, loop: EventLoop, timings: RedisTimings = RedisTimings(), clientName: String? = nil,
                tls: RedisTLSContext? = nil) {
        self.seeds = seeds
        self.loop = loop
        self.timings = timings
        self.clientName = clientName
        // One configuration for every link (loading the system's store once, not per link).
        self.tls = seeds.tls ? (tls ?? (try? RedisTLSContext(settings: RedisTLSSettings()))) : nil
        refreshBackoff = Backoff(initial: timings.initialBackoffSeconds, maximum: timings.maxBackoffSeconds)
        source = RedisClusterMapSource(seeds: seeds, loop: loop, timings: timings, clientName: clientName, tls: self.tls)
        refreshTimer = LoopTimer(loop: loop) { [unowned self] in refreshNow() }
    }

    /// Asks for the slot map and connects to its masters.
    public func start() {
        refreshNow()
    }

    /// Sends one command routed by `keys` (the command's key arguments, which must share a
    /// slot); the completion runs on the loop's thread, in send order among the slot's commands.
    public func send(_ arguments: [[UInt8]], keys: [[UInt8]], completion: @escaping Completion) {
        route(keys: keys, completion: completion) { connection, asking, done in
            if asking { connection.send([Array("ASKING".utf8)]) { _ in } }
            connection.send(arguments, completion: done)
        }
    }

    /// ``send(_:keys:completion:)`` with text arguments and keys (UTF-8).
    public func send(_ arguments: [String], keys: [String], completion: @escaping Completion) {
        send(arguments.map { Array($0.utf8) }, keys: keys.map { Array($0.utf8) }, completion: completion)
    }

    /// Runs `script` (`EVALSHA`, loaded first on each master's link, `EVAL` after `NOSCRIPT`)
    /// on the master of its `keys`' slot, redirected like ``send(_:keys:completion:)``.
    public func run(_ script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]] = [], completion: @escaping Completion) {
        route(keys: keys, completion: completion) { connection, asking, done in
            connection.load(script)
            if asking { connection.send([Array("ASKING".utf8)]) { _ in } }
            script.run(on: connection, keys: keys, arguments: arguments, completion: done)
        }
    }

    /// Runs `script` declaring `keys` (none, here) on the master of the slot of `routingKey`: for
    /// a script without a shebang that reaches its keys by name, all in that one slot (Redis
    /// lets such a script touch keys it did not declare on the master that serves them).
    public func run(_ script: RedisScript, keys: [[UInt8]], routedBy routingKey: [UInt8], arguments: [[UInt8]] = [],
                    completion: @escaping Completion) {
        route(keys: [routingKey], completion: completion) { connection, asking, done in
            connection.load(script)
            if asking { connection.send([Array("ASKING".utf8)]) { _ in } }
            script.run(on: connection, keys: keys, arguments: arguments, completion: done)
        }
    }

    /// Closes every connection for good: pending completions fail with ``RedisError/Code/closed``.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        refreshTimer.cancel()
        source.close()
        let open = connections.values
        connections.removeAll()
        for connection in open { connection.close() }
    }

    // MARK: Routing

    private func route(keys: [[UInt8]], completion: @escaping Completion, perform: @escaping Perform) {
        guard !isClosed else {
            completion(.failure(RedisError(.closed, "the cluster client was closed")))
            return
        }
        let slot: Int
        do {
            guard let shared = try RedisClusterSlot.shared(by: keys) else {
                completion(.failure(RedisError(.noKey, "a command to a Redis Cluster needs a key to route it by")))
                return
            }
            slot = shared
        } catch {
            completion(.failure(error))
            return
        }
        let ticket = order.issue(slot: slot, completion)
        guard let master = map?.master(of: slot) else {
            requestRefresh()
            order.settle(ticket, .failure(unavailable(map == nil ? "no slot map yet" : "slot \(slot) has no master")))
            return
        }
        dispatch(perform, slot: slot, ticket: ticket, to: master, asking: false, redirectsLeft: 1)
    }

    private func dispatch(_ perform: @escaping Perform, slot: Int, ticket: RedisClusterReplyOrder.Ticket,
                          to master: RedisHostPort, asking: Bool, redirectsLeft: Int) {
        let connection = connection(to: master)
        perform(connection, asking) { [weak self] result in
            guard let self else { return }
            answered(result, perform, slot: slot, ticket: ticket, from: master, redirectsLeft: redirectsLeft)
        }
    }

    private func answered(_ result: Result<RedisReply, RedisError>, _ perform: @escaping Perform, slot: Int,
                          ticket: RedisClusterReplyOrder.Ticket, from master: RedisHostPort, redirectsLeft: Int) {
        guard case .failure(let error) = result, !isClosed else {
            order.settle(ticket, result)
            return
        }
        switch error.code {
        case .errorReply:
            if let redirect = RedisClusterRedirect(errorLine: error.message, answeredBy: master) {
                redirected(redirect, perform, slot: slot, ticket: ticket, redirectsLeft: redirectsLeft, line: error.message)
            } else if error.message.hasPrefix("TRYAGAIN") || error.message.hasPrefix("CLUSTERDOWN") {
                requestRefresh()
                order.settle(ticket, .failure(unavailable("\(master) answered \(error.message)")))
            } else {
                order.settle(ticket, result)
            }
        case .closed:
            // Closed here because the address left the map (a demoted master): not the caller's close.
            requestRefresh()
            order.settle(ticket, .failure(RedisError(.connectionLost, "\(master) left the slot map with the command in flight", retryAfterMs: retryAfterMs)))
        case .unavailable, .connectionLost, .timeout, .connectFailed, .unresolved, .handshakeRefused:
            requestRefresh()
            order.settle(ticket, result)
        default:
            order.settle(ticket, result)
        }
    }

    private func redirected(_ redirect: RedisClusterRedirect, _ perform: @escaping Perform, slot: Int,
                            ticket: RedisClusterReplyOrder.Ticket, redirectsLeft: Int, line: String) {
        guard redirectsLeft > 0 else {
            requestRefresh()
            order.settle(ticket, .failure(unavailable("slot \(slot) was redirected again (\(line)): it is moving")))
            return
        }
        switch redirect {
        case .moved(let movedSlot, let to):
            if var changed = map {
                changed.assign(movedSlot...movedSlot, to: to)
                if changed != map {
                    map = changed
                    onMapChange?(changed)
                }
            }
            requestRefresh()
            dispatch(perform, slot: slot, ticket: ticket, to: to, asking: false, redirectsLeft: redirectsLeft - 1)
        case .ask(_, let to):
            dispatch(perform, slot: slot, ticket: ticket, to: to, asking: true, redirectsLeft: redirectsLeft - 1)
        }
    }

    /// The connection to `address`, made (and started) the first time it is needed.
    private func connection(to address: RedisHostPort) -> RedisConnection {
        if let known = connections[address] { return known }
        let connection = RedisConnection(target: .server(seeds.node(at: address)), loop: loop, timings: timings,
                                         clientName: clientName, tls: tls)
        connection.onStateChange = { [unowned self, unowned connection] state in
            guard connections[address] === connection else { return }
            if !state.isConnected { requestRefresh() }
        }
        connections[address] = connection
        connection.start()
        return connection
    }

    // MARK: The slot map

    /// Asks for the slot map again (after the backoff delay), e.g. when a pub/sub link saw a
    /// slot move; a refresh already under way or due is not doubled.
    public func refreshMap() {
        requestRefresh()
    }

    /// A refresh after the current backoff delay, unless one is under way or due.
    private func requestRefresh() {
        guard !isClosed, !refreshing, !refreshTimer.isScheduled else { return }
        refreshTimer.schedule(after: refreshBackoff.take())
    }

    private func refreshNow() {
        guard !isClosed, !refreshing else { return }
        refreshing = true
        let asked = (map?.masters ?? []).compactMap { address in
            connections[address].flatMap { $0.state.isConnected ? (address, $0) : nil }
        }
        source.fetch(preferring: asked) { [weak self] result in
            guard let self, !isClosed else { return }
            refreshing = false
            switch result {
            case .success(let fresh):
                lastRefreshError = nil
                apply(fresh)
                if isReady { refreshBackoff.reset() } else { requestRefresh() }
            case .failure(let error):
                lastRefreshError = error
                requestRefresh()
            }
        }
    }

    private func apply(_ fresh: RedisClusterSlotMap) {
        let changed = fresh != map
        map = fresh
        for master in fresh.masters { _ = connection(to: master) }
        for (address, connection) in connections where !fresh.masters.contains(address) {
            connections[address] = nil
            connection.close()
        }
        if changed { onMapChange?(fresh) }
    }

    // MARK: Helpers

    /// The hint for an UNAVAILABLE answer: the next map refresh.
    private var retryAfterMs: Int {
        max(1, Int((refreshBackoff.next * 1000).rounded(.up)))
    }

    private func unavailable(_ why: String) -> RedisError {
        RedisError(.unavailable, "Redis Cluster at \(seeds) is unavailable (\(why))", retryAfterMs: retryAfterMs)
    }
}
