import DequeModule
import RollcallEventLoop

/// The command connection: pipelined commands on one link (``RedisLink``: a socket, plain or
/// TLS, driven by the broker's libev loop), with a watchdog and reconnects. Use it on the loop's thread only.
///
/// - Before each connect the address is found without blocking the loop (``RedisLocator``: a
///   host name resolved on a thread; with Sentinel, the master the sentinels name now).
/// - At connect `AUTH` and `SELECT` (from the target), with Sentinel a `ROLE` that must answer
///   `master`, and a `PING` go first; the connection is ``RedisConnectionState/connected``
///   once the `PING` answers. With Sentinel a `READONLY` reply (the master was demoted) takes
///   the link down, and the next connect asks the sentinels again.
/// - Replies complete in the order commands were sent.
/// - Watchdog: when the oldest command has waited ``RedisTimings/timeoutSeconds`` the link is
///   declared down, every pending completion fails with ``RedisError/Code/timeout``, and a new
///   link is made.
/// - While down, ``send(_:completion:)`` fails at once with ``RedisError/Code/unavailable``
///   and a `retryAfterMs` hint; reconnects run from a timer with exponential backoff.
public final class RedisConnection {
    /// A command's outcome: the reply, or why there is none (an error reply is
    /// ``RedisError/Code/errorReply`` with Redis' line as the message).
    public typealias Completion = (Result<RedisReply, RedisError>) -> Void

    /// What this connection goes to (`cluster.redis`).
    public var target: RedisTarget { locator.target }
    /// The numeric endpoint of the current (or latest) link, nil before the first one.
    public private(set) var address: RedisEndpoint?
    /// Timeout and backoff.
    public let timings: RedisTimings
    /// Called on each change between connected and disconnected (not for every failed retry).
    public var onStateChange: ((RedisConnectionState) -> Void)?
    /// The current state.
    public var state: RedisConnectionState { reconnector.state }
    /// Called for every failed connect attempt and every lost link, also while the state stays
    /// disconnected (e.g. a certificate that does not verify at each retry).
    public var onLinkFailure: ((RedisError) -> Void)?

    private struct Pending {
        let deadline: Double
        let completion: Completion
    }

    private let loop: EventLoop
    /// Where each link connects; shared with the subscriber that probes through this connection.
    let locator: RedisLocator
    /// Bumped at each connect and at close: a late answer of ``locator`` is ignored.
    private var link: RedisLink?
    private let reconnector: RedisReconnector
    private var pending = Deque<Pending>()
    /// SHA-1s of the scripts loaded on the current link (a new link starts with none: the
    /// Redis behind it may have restarted, or failed over, without its scripts).
    private var loadedScripts: Set<String> = []
    private var watchdog: LoopTimer!

    /// The name each link gives itself (`CLIENT SETNAME`), so an operator finds it in `CLIENT LIST`.
    public let clientName: String?

    /// A connection to `target` on `loop`, naming its links `clientName` (letters, digits and
    /// punctuation; spaces become `_`); nothing happens until ``start()``. A `rediss` target's
    /// links (and its subscriber's) use `tls`, or the system's CA store when it is nil.
    public init(target: RedisTarget, loop: EventLoop, timings: RedisTimings = RedisTimings(), clientName: String? = nil,
                tls: RedisTLSContext? = nil) {
        self.clientName = clientName.map { String($0.map { $0.isWhitespace ? "_" : $0 }) }
        locator = RedisLocator(target: target, loop: loop, timeoutSeconds: timings.timeoutSeconds, tls: tls)
        self.loop = loop
        self.timings = timings
        reconnector = RedisReconnector(loop: loop, timings: timings)
        watchdog = LoopTimer(loop: loop) { [unowned self] in self.watchdogFired() }
        reconnector.bringUp = { [unowned self] in connect() }
        reconnector.notify = { [unowned self] state in onStateChange?(state) }
        reconnector.failed = { [unowned self] error in onLinkFailure?(error) }
    }

    /// A connection to one server at `endpoint` (``RedisTarget/server(_:)``).
    public convenience init(endpoint: RedisEndpoint, loop: EventLoop, timings: RedisTimings = RedisTimings(), clientName: String? = nil) {
        self.init(target: .server(endpoint), loop: loop, timings: timings, clientName: clientName)
    }

    /// Starts the first connect (set the handlers first).
    public func start() {
        locator.observeSwitches { [weak self] master in self?.masterSwitched(to: master) }
        reconnector.start()
    }

    /// Sends one command (binary-safe arguments, e.g. `["SET", key, value]`). The completion
    /// runs on the loop's thread; at once when the connection is down.
    public func send(_ arguments: [[UInt8]], completion: @escaping Completion) {
        guard reconnector.isReady, link != nil else {
            completion(.failure(unavailableError))
            return
        }
        enqueue(arguments, completion)
    }

    /// Loads `script` on the current link ahead of the commands sent after it, once per link,
    /// so that its first `EVALSHA` finds it and nothing runs out of order (an `EVAL` fallback
    /// after `NOSCRIPT` would go out behind the commands queued meanwhile). A load that failed
    /// is tried again at the next use; nothing is sent while the link is down.
    public func load(_ script: RedisScript) {
        guard reconnector.isReady, link != nil, loadedScripts.insert(script.sha1).inserted else { return }
        enqueue([Array("SCRIPT".utf8), Array("LOAD".utf8), Array(script.source.utf8)]) { [weak self] result in
            if case .failure = result { self?.loadedScripts.remove(script.sha1) }
        }
    }

    /// ``send(_:completion:)`` with text arguments (UTF-8).
    public func send(_ arguments: [String], completion: @escaping Completion) {
        send(arguments.map { Array($0.utf8) }, completion: completion)
    }

    /// Milliseconds until the next connect attempt is likely to have succeeded: the hint for
    /// an `UNAVAILABLE` answer's `retryAfterMs`.
    public var retryAfterMs: Int { reconnector.retryAfterMs }

    /// Closes the connection for good: pending completions fail with ``RedisError/Code/closed``.
    public func close() {
        guard !reconnector.isClosed else { return }
        let error = RedisError(.closed, "the connection was closed")
        let orphans = takeDownLink()
        reconnector.close(error)
        locator.close()
        for orphan in orphans { orphan.completion(.failure(error)) }
    }

    deinit {
        link?.delegate = nil
        link?.close()
    }

    // MARK: Link management

    private var unavailableError: RedisError {
        let why: String
        if case .disconnected(let reason) = state { why = reason.message } else { why = "connecting" }
        return RedisError(.unavailable, "Redis at \(target) is unavailable (\(why))", retryAfterMs: retryAfterMs)
    }

    /// Where the link goes: the target, and the address of the latest link when it differs.
    private var whereabouts: String {
        guard let address, address.description != target.description else { return "\(target)" }
        return "\(target) at \(address.address)"
    }

    private func connect() {
        reconnector.locate(with: locator) { [weak self] endpoint in self?.open(endpoint) }
    }

    private func open(_ endpoint: RedisEndpoint) {
        guard let link = reconnector.makeLink(to: endpoint, with: locator, reportingTo: self) else { return }
        self.link = link
        address = endpoint
        loadedScripts.removeAll()
        if let password = endpoint.password {
            let words = ["AUTH"] + (endpoint.user.map { [$0] } ?? []) + [password]
            handshake(words, on: link, step: "AUTH")
        }
        if endpoint.database != 0 {
            handshake(["SELECT", String(endpoint.database)], on: link, step: "SELECT \(endpoint.database)")
        }
        if locator.checksRole {
            enqueue([Array("ROLE".utf8)]) { [unowned self] result in
                // An ACL user without ROLE (NOPERM) cannot tell: a READONLY reply still will.
                if case .failure(let error) = result, error.message.hasPrefix("NOPERM") { return }
                guard link === self.link else { return }
                let reply = try? result.get()
                let role = reply?.elements?.first?.text
                guard role != "master" else { return }
                locator.masterRefused()
                drop(RedisError(.notMaster, "\(endpoint.address), named by the sentinels, answers ROLE as \(role ?? "nothing"), not master"))
            }
        }
        if let clientName {
            handshake(["CLIENT", "SETNAME", clientName], on: link, step: "CLIENT SETNAME")
        }
        enqueue([Array("PING".utf8)]) { [unowned self] result in
            guard link === self.link else { return }
            switch result {
            case .success:
                reconnector.ready()
            case .failure(let error):
                drop(RedisError(.handshakeRefused, "PING at connect: \(error.message)"))
            }
        }
    }

    /// The sentinels announced a failover: a link to another address leaves it now, even idle,
    /// and the next connect asks them where the master is.
    private func masterSwitched(to master: RedisHostPort) {
        guard link != nil, let address, address.address != master else { return }
        drop(RedisError(.notMaster, "the sentinels switched the master to \(master) (+switch-master)"))
    }

    private func handshake(_ words: [String], on link: RedisLink, step: String) {
        enqueue(words.map { Array($0.utf8) }) { [unowned self] result in
            guard link === self.link, case .failure(let error) = result else { return }
            drop(RedisError(.handshakeRefused, "\(step) at connect: \(error.message)"))
        }
    }

    private func enqueue(_ arguments: [[UInt8]], _ completion: @escaping Completion) {
        guard let link, link.send(arguments) else {
            completion(.failure(unavailableError))
            return
        }
        let now = loop.now
        pending.append(Pending(deadline: now + timings.timeoutSeconds, completion: completion))
        if pending.count == 1 { watchdog.schedule(after: timings.timeoutSeconds) }
    }

    private func watchdogFired() {
        guard let oldest = pending.first else { return }
        let now = loop.now
        if oldest.deadline > now + 0.001 {
            watchdog.schedule(after: oldest.deadline - now)
            return
        }
        drop(RedisError(.timeout, "Redis at \(whereabouts) did not answer within \(timings.timeoutSeconds) s"))
    }

    /// Takes the current link down: fails every pending completion with `error`, reports the
    /// state and schedules a reconnect (``RedisLinkLifecycle/lost(_:now:)``).
    private func drop(_ error: RedisError) {
        let orphans = takeDownLink()
        reconnector.lost(error)
        for orphan in orphans { orphan.completion(.failure(error)) }
    }

    /// Closes the current link, if any, and returns the commands it leaves unanswered.
    private func takeDownLink() -> Deque<Pending> {
        guard let link else { return [] }
        self.link = nil
        link.delegate = nil
        link.close()
        watchdog.cancel()
        let orphans = pending
        pending.removeAll()
        return orphans
    }
}

extension RedisConnection: RedisLinkDelegate {
    func link(_ link: RedisLink, received reply: RedisReply) {
        guard link === self.link else { return }
        guard let oldest = pending.popFirst() else {
            drop(RedisError(.protocolViolation, "a reply for no command"))
            return
        }
        if case .error(let line) = reply {
            oldest.completion(.failure(RedisError(.errorReply, line)))
            // A master the sentinels named was demoted while this link stayed up: ask again.
            if locator.checksRole, line.hasPrefix("READONLY"), link === self.link {
                locator.masterRefused()
                drop(RedisError(.notMaster, "\(whereabouts) answered READONLY: it is no longer the master"))
            }
        } else {
            oldest.completion(.success(reply))
        }
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        guard link === self.link else { return }
        drop(error)
    }
}
