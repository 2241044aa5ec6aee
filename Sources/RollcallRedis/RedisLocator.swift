import RollcallEventLoop

/// Where a ``RedisConnection`` and its ``RedisSubscriber`` connect next, found on the loop
/// without blocking it, at every (re)connect:
///
/// - ``RedisTarget/server(_:)``: the endpoint with its host resolved (``HostResolver``);
/// - ``RedisTarget/sentinel(_:)``: the master the sentinels name now (``SentinelDiscovery``,
///   one ``SentinelQuery`` at a time), its host resolved too.
///
/// Links that ask while a lookup is under way share its answer (both links of a node
/// reconnecting after a failover make one round of questions). Every lookup ends within
/// about the timeout given: each step (a name lookup, a sentinel's answer) is bounded.
/// Loop thread only.
final class RedisLocator {
    /// A numeric endpoint to connect to (with the target's credentials and database), or why
    /// there is none now.
    typealias Completion = (Result<RedisEndpoint, RedisError>) -> Void

    /// What `cluster.redis` names.
    let target: RedisTarget
    private let loop: EventLoop
    private let timeoutSeconds: Double
    private let resolver: HostResolver
    private var discovery: SentinelDiscovery?
    private var query: SentinelQuery?
    private var waiters: [Completion] = []
    /// Bumped by every lookup and by ``close()``: answers of an older one are ignored.
    private var generation: UInt64 = 0
    private var isClosed = false
    /// The `+switch-master` watch (Sentinel), started by the first ``observeSwitches(_:)``.
    private var watch: SentinelWatch?
    private var switchObservers: [(RedisHostPort) -> Void] = []

    /// The TLS configuration of a `rediss` target's links (nil for a plain one).
    let tls: RedisTLSContext?
    /// Why a `rediss` target has no TLS configuration (the system's store could not be loaded).
    private let tlsProblem: RedisError?

    /// A locator for `target` on `loop`; each step of a lookup waits at most `timeoutSeconds`.
    /// A `rediss` target's links use `tls`, or the system's CA store when it is nil.
    init(target: RedisTarget, loop: EventLoop, timeoutSeconds: Double, tls: RedisTLSContext? = nil) {
        self.target = target
        var problem: RedisError?
        if target.usesTLS, tls == nil {
            do { self.tls = try RedisTLSContext(settings: RedisTLSSettings()) } catch {
                self.tls = nil
                problem = error as? RedisError ?? RedisError(.invalidTLS, "\(error)")
            }
        } else {
            self.tls = target.usesTLS ? tls : nil
        }
        tlsProblem = problem
        self.loop = loop
        self.timeoutSeconds = timeoutSeconds
        resolver = HostResolver(loop: loop)
        if case .sentinel(let set) = target {
            discovery = SentinelDiscovery(masterName: set.masterName, sentinelCount: set.sentinels.count)
        }
    }

    /// True when links must check that the address answers as master (Sentinel).
    var checksRole: Bool { target.isSentinel }

    /// Finds where to connect now; `completion` runs on the loop (at once for an address
    /// literal of a single server).
    func locate(_ completion: @escaping Completion) {
        guard !isClosed else {
            completion(.failure(RedisError(.closed, "the connection was closed")))
            return
        }
        waiters.append(completion)
        guard waiters.count == 1 else { return }
        generation += 1
        switch target {
        case .server(let endpoint):
            resolve(endpoint.address, generation: generation) { [unowned self] result in
                finish(result.map { endpoint.at($0) })
            }
        case .sentinel:
            carryOut(discovery!.start(), generation: generation)
        case .cluster:
            // One connection goes to one node: a cluster's masters each get their own
            // (RedisClusterClient, which gives them `.server` targets).
            finish(.failure(RedisError(.unsupportedEndpoint, "a Redis Cluster (\(target)) is spoken by RedisClusterClient, not by one connection")))
        }
    }

    /// What a link to `endpoint` (as this locator answered it) checks over TLS; nil for a
    /// plain link. Throws when a `rediss` target has no TLS configuration.
    func tlsLink(for endpoint: RedisEndpoint) throws -> RedisTLSContext.Link? {
        guard endpoint.tls else { return nil }
        guard let tls else { throw tlsProblem ?? RedisError(.invalidTLS, "no TLS configuration") }
        return tls.link(to: endpoint.namedHost ?? endpoint.host)
    }

    /// A link found that the address it was given is not the master (`ROLE`, `READONLY`): the
    /// next lookup starts with another sentinel.
    func masterRefused() {
        discovery?.notMaster()
    }

    /// Calls `body` with the master's new address each time the sentinels announce a failover
    /// (`+switch-master`); nothing for a single server. The first call subscribes on a sentinel.
    func observeSwitches(_ body: @escaping (RedisHostPort) -> Void) {
        guard case .sentinel(let set) = target, !isClosed else { return }
        switchObservers.append(body)
        guard watch == nil else { return }
        let watch = SentinelWatch(set: set, loop: loop, tls: tls, timings: RedisTimings(timeoutSeconds: timeoutSeconds)) { [unowned self] address, done in
            resolver.resolve(address.host, timeout: timeoutSeconds) { done($0.map { RedisHostPort(host: $0, port: address.port) }) }
        }
        watch.onSwitch = { [unowned self] address in
            for observer in switchObservers { observer(address) }
        }
        self.watch = watch
        watch.start()
    }

    /// Stops any lookup (pending completions fail with ``RedisError/Code/closed``), the
    /// `+switch-master` watch and the resolver's wake-ups: call before the loop goes away.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        watch?.close()
        watch = nil
        switchObservers.removeAll()
        generation += 1
        query?.cancel()
        query = nil
        resolver.close()
        finish(.failure(RedisError(.closed, "the connection was closed")))
    }

    // MARK: Sentinel rounds

    private func carryOut(_ step: SentinelDiscovery.Step, generation: UInt64) {
        guard case .sentinel(let set) = target, generation == self.generation else { return }
        switch step {
        case .ask(let index):
            let sentinel = set.sentinels[index]
            // A round is bounded by about the timeout however many sentinels do not answer.
            let timeout = max(0.1, timeoutSeconds / Double(set.sentinels.count))
            resolve(sentinel, generation: generation) { [unowned self] result in
                switch result {
                case .failure(let error):
                    carryOut(discovery!.failed(error), generation: generation)
                case .success(let address):
                    let link = set.tls ? tls?.link(to: sentinel.host) : nil
                    let credentials = set.password.map { SentinelQuery.Credentials(user: set.user, password: $0) }
                    query = SentinelQuery(address: address, masterName: set.masterName, loop: loop, timeout: timeout, tls: link,
                                          credentials: credentials) { [unowned self] answer in
                        guard generation == self.generation else { return }
                        query = nil
                        switch answer {
                        case .success(let reply): carryOut(discovery!.answered(reply), generation: generation)
                        case .failure(let error): carryOut(discovery!.failed(error), generation: generation)
                        }
                    }
                }
            }
        case .found(let master):
            resolve(master, generation: generation) { [unowned self] result in
                finish(result.map { address in
                    var endpoint = set.master(at: address)
                    if address.host != master.host { endpoint.namedHost = master.host }
                    return endpoint
                })
            }
        case .failed(let error):
            finish(.failure(error))
        }
    }

    // MARK: Helpers

    /// `address` with its host resolved; dropped when a newer lookup started meanwhile.
    private func resolve(_ address: RedisHostPort, generation: UInt64,
                         _ then: @escaping (Result<RedisHostPort, RedisError>) -> Void) {
        resolver.resolve(address.host, timeout: timeoutSeconds) { [unowned self] result in
            guard generation == self.generation else { return }
            then(result.map { RedisHostPort(host: $0, port: address.port) })
        }
    }

    private func finish(_ result: Result<RedisEndpoint, RedisError>) {
        let waiting = waiters
        waiters.removeAll()
        for waiter in waiting { waiter(result) }
    }
}
