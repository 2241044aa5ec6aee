import RollcallEventLoop

/// Carries out a ``RedisLinkLifecycle`` on a loop for one Redis client (``RedisConnection``,
/// ``RedisSubscriber``): its reconnect timer, and the two things only the client knows, how
/// to bring a link up (``bringUp``) and whom to tell of a change (``notify``). Loop thread only.
final class RedisReconnector {
    /// Makes a new link (with ``makeLink(to:with:reportingTo:)``) and starts its handshake.
    var bringUp: () -> Void = {}
    /// Tells the client's `onStateChange`.
    var notify: (RedisConnectionState) -> Void = { _ in }
    /// Told of every failed attempt and lost link, whether or not the state changed.
    var failed: (RedisError) -> Void = { _ in }

    private var lifecycle: RedisLinkLifecycle
    /// Numbers the lookups of ``locate(with:then:)``: only the latest may open a link.
    private var attempt: UInt64 = 0
    private let loop: EventLoop
    private var timer: LoopTimer!

    /// A reconnector on `loop` backing off as `timings` say; set the two closures before ``start()``.
    init(loop: EventLoop, timings: RedisTimings) {
        self.loop = loop
        lifecycle = RedisLinkLifecycle(timings: timings)
        timer = LoopTimer(loop: loop) { [unowned self] in carryOut(lifecycle.reconnectDue()) }
    }

    /// The latest state.
    var state: RedisConnectionState { lifecycle.state }
    /// True while the link is up and usable.
    var isReady: Bool { lifecycle.isReady }
    /// True once closed.
    var isClosed: Bool { lifecycle.isClosed }
    /// True while a link is being made.
    var isConnecting: Bool { lifecycle.isConnecting }
    /// The `retryAfterMs` hint of an `UNAVAILABLE` answer.
    var retryAfterMs: Int { lifecycle.retryAfterMs(now: loop.now) }

    /// The first connect.
    func start() { carryOut(lifecycle.start()) }
    /// The link is usable.
    func ready() { carryOut(lifecycle.ready()) }
    /// The link, or the attempt to make one, failed: back off and try again.
    func lost(_ error: RedisError) {
        let steps = lifecycle.lost(error, now: loop.now)
        if !lifecycle.isClosed { failed(error) }
        carryOut(steps)
    }
    /// No more attempts.
    func close(_ error: RedisError) {
        attempt += 1
        carryOut(lifecycle.close(error))
    }

    /// Asks `locator` where the next link goes; `open` runs with the answer unless this
    /// reconnector stopped connecting or began a newer attempt meanwhile. A failed lookup
    /// counts as a lost link (backoff, then the next attempt).
    func locate(with locator: RedisLocator, then open: @escaping (RedisEndpoint) -> Void) {
        attempt += 1
        let attempt = self.attempt
        locator.locate { [weak self] result in
            guard let self, attempt == self.attempt, isConnecting else { return }
            switch result {
            case .success(let endpoint): open(endpoint)
            case .failure(let error): lost(error)
            }
        }
    }

    /// A new link to `endpoint` (as `locator` answered it: TLS for a `rediss` target) that
    /// reports to `delegate`, or nil when it could not be made (then counted as lost).
    func makeLink(to endpoint: RedisEndpoint, with locator: RedisLocator, reportingTo delegate: RedisLinkDelegate) -> RedisLink? {
        do {
            let link = try RedisLink(endpoint: endpoint, loop: loop, tls: try locator.tlsLink(for: endpoint))
            link.delegate = delegate
            return link
        } catch {
            lost(error as? RedisError ?? RedisError(.connectFailed, "\(error)"))
            return nil
        }
    }

    private func carryOut(_ steps: [RedisLinkLifecycle.Step]) {
        for step in steps {
            switch step {
            case .connect: bringUp()
            case .scheduleReconnect(let delay): timer.schedule(after: delay)
            case .cancelReconnect: timer.cancel()
            case .notify(let state): notify(state)
            }
        }
    }
}
