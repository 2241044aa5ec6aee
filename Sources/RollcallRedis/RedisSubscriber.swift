import RollcallEventLoop

/// The pub/sub connection: its own hiredis context in subscribed mode, on the same loop.
/// Use it on the loop's thread only.
///
/// - It goes where its ``publisher`` goes, found again at every connect (the publisher's
///   ``RedisLocator``: a resolved host name; with Sentinel, the master the sentinels name
///   now, checked with `ROLE` before subscribing).
/// - ``subscribe(_:)`` / ``unsubscribe(_:)`` change the channel set (binary names); the set
///   outlives links: after any loss a new link subscribes every channel again, then
///   ``onResubscribed`` runs (compare what may have been missed then).
/// - Probe: hiredis 0.14 gives no callback for a `PING` on a subscribed context, so every
///   ``RedisTimings/probeIntervalSeconds`` the subscriber `PUBLISH`es a token, through the
///   command connection, to a channel only this link is subscribed to. No receiver, or no
///   message within ``RedisTimings/timeoutSeconds``: the link is declared down and replaced.
public final class RedisSubscriber {
    /// A message on a subscribed channel: `(channel, payload)`.
    public var onMessage: ((_ channel: [UInt8], _ payload: [UInt8]) -> Void)?
    /// Called on each change between connected and disconnected.
    public var onStateChange: ((RedisConnectionState) -> Void)?
    /// Called each time a link is up with every channel of the set subscribed — after the
    /// first connect and after every reconnect. Messages published while no link was
    /// subscribed are lost: compare state (e.g. `seq`s) here.
    public var onResubscribed: (() -> Void)?
    /// The channels subscribed (or to be subscribed once a link is up).
    public private(set) var channels: Set<[UInt8]> = []
    /// The current state.
    public var state: RedisConnectionState { reconnector.state }

    /// What this subscriber goes to: its publisher's target.
    public var target: RedisTarget { publisher.target }
    /// Timeout, backoff and probe interval.
    public let timings: RedisTimings
    /// The connection probes are published through.
    public let publisher: RedisConnection

    private let loop: EventLoop
    private let probePrefix: [UInt8]
    private var locator: RedisLocator { publisher.locator }
    /// Bumped at each connect and at close: a late answer of the locator is ignored.
    /// True from sending `ROLE` on a new link until its answer (Sentinel).
    private var awaitingRole = false
    private var link: RedisLink?
    /// Where ``link`` goes.
    private var linkAddress: RedisHostPort?
    private let reconnector: RedisReconnector
    private var probeChannel: [UInt8] = []
    private var outstandingProbe: [UInt8]?
    private var probeCount = 0
    /// Handshake deadline, then probe interval and probe deadline.
    private var probeTimer: LoopTimer!
    /// Channels per `SUBSCRIBE` command when a link subscribes the whole set.
    private static let channelsPerCommand = 512

    /// A subscriber on `loop` to the Redis `publisher` goes to, probing through it; probe
    /// channels are named `probeChannelPrefix` + a random id per link (put the cluster's
    /// `keyPrefix` in it). Nothing happens until ``start()``.
    public init(loop: EventLoop, publisher: RedisConnection,
                probeChannelPrefix: String = "rollcall:probe:", timings: RedisTimings = RedisTimings()) {
        self.loop = loop
        self.publisher = publisher
        self.timings = timings
        probePrefix = Array(probeChannelPrefix.utf8)
        reconnector = RedisReconnector(loop: loop, timings: timings)
        probeTimer = LoopTimer(loop: loop) { [unowned self] in self.probeTimerFired() }
        reconnector.bringUp = { [unowned self] in connect() }
        reconnector.notify = { [unowned self] state in onStateChange?(state) }
    }

    /// Starts the first connect (set the handlers first).
    public func start() {
        locator.observeSwitches { [weak self] master in
            guard let self, link != nil, linkAddress != master else { return }
            drop(RedisError(.notMaster, "the sentinels switched the master to \(master) (+switch-master)"))
        }
        reconnector.start()
    }

    /// Adds `channel` to the set and subscribes it on the current link, if any.
    public func subscribe(_ channel: [UInt8]) {
        guard channels.insert(channel).inserted, let link else { return }
        link.send([Array("SUBSCRIBE".utf8), channel])
    }

    /// Removes `channel` from the set and unsubscribes it on the current link, if any.
    public func unsubscribe(_ channel: [UInt8]) {
        guard channels.remove(channel) != nil, let link else { return }
        link.send([Array("UNSUBSCRIBE".utf8), channel])
    }

    /// ``subscribe(_:)`` with a text name (UTF-8).
    public func subscribe(_ channel: String) { subscribe(Array(channel.utf8)) }

    /// ``unsubscribe(_:)`` with a text name (UTF-8).
    public func unsubscribe(_ channel: String) { unsubscribe(Array(channel.utf8)) }

    /// Closes the subscriber for good.
    public func close() {
        guard !reconnector.isClosed else { return }
        takeDownLink()
        reconnector.close(RedisError(.closed, "the subscriber was closed"))
    }

    deinit {
        link?.delegate = nil
        link?.close()
    }

    /// Test hook: unsubscribes every channel on the live link behind the subscriber's back,
    /// as if Redis had dropped the subscriptions while the TCP connection stayed up. Only
    /// the probe can notice this.
    func dropSubscriptionsSilently() {
        link?.send([Array("UNSUBSCRIBE".utf8)])
    }

    // MARK: Link management

    private func connect() {
        reconnector.locate(with: locator) { [weak self] endpoint in self?.open(endpoint) }
    }

    private func open(_ endpoint: RedisEndpoint) {
        guard let link = reconnector.makeLink(to: endpoint, with: locator, reportingTo: self) else { return }
        self.link = link
        linkAddress = endpoint.address
        outstandingProbe = nil
        probeChannel = probePrefix + Array(Self.randomID().utf8)
        if let auth = endpoint.authArguments { link.send(auth) }
        awaitingRole = locator.checksRole
        if awaitingRole { link.send([Array("ROLE".utf8)]) }
        var batch: [[UInt8]] = []
        for channel in channels {
            batch.append(channel)
            if batch.count == Self.channelsPerCommand {
                link.send([Array("SUBSCRIBE".utf8)] + batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { link.send([Array("SUBSCRIBE".utf8)] + batch) }
        // Confirmations come in order: the probe channel's says every channel before it is in.
        link.send([Array("SUBSCRIBE".utf8), probeChannel])
        probeTimer.schedule(after: timings.timeoutSeconds)
    }

    private func established() {
        probeTimer.schedule(after: timings.probeIntervalSeconds)
        reconnector.ready()
        onResubscribed?()
    }

    private func probeTimerFired() {
        guard let link else { return }
        guard reconnector.isReady else {
            drop(RedisError(.timeout, "subscribing at \(target) took longer than \(timings.timeoutSeconds) s"))
            return
        }
        if outstandingProbe != nil {
            drop(RedisError(.timeout, "the probe message did not arrive within \(timings.timeoutSeconds) s"))
            return
        }
        probeCount += 1
        let token = Array(String(probeCount).utf8)
        outstandingProbe = token
        probeTimer.schedule(after: timings.timeoutSeconds)
        publisher.send([Array("PUBLISH".utf8), probeChannel, token]) { [weak self] result in
            guard let self, link === self.link, self.outstandingProbe == token else { return }
            switch result {
            case .success(.integer(0)):
                self.drop(RedisError(.subscriptionLost, "no subscriber on this link's probe channel"))
            case .success:
                break
            case .failure:
                // The command connection is down (its own watchdog reports that): skip this round.
                self.outstandingProbe = nil
                self.probeTimer.schedule(after: self.timings.probeIntervalSeconds)
            }
        }
    }

    /// Takes the current link down, reports the state and schedules a reconnect
    /// (``RedisLinkLifecycle/lost(_:now:)``).
    private func drop(_ error: RedisError) {
        takeDownLink()
        reconnector.lost(error)
    }

    /// Closes the current link, if any, and stops its probes.
    private func takeDownLink() {
        guard let link else { return }
        self.link = nil
        link.delegate = nil
        link.close()
        outstandingProbe = nil
        probeTimer.cancel()
    }

    private static func randomID() -> String {
        (0..<4).map { _ in String(UInt32.random(in: 0...UInt32.max), radix: 16) }.joined()
    }
}

extension RedisSubscriber: RedisLinkDelegate {
    func link(_ link: RedisLink, received reply: RedisReply) {
        guard link === self.link else { return }
        if awaitingRole, case .error(let line) = reply, line.hasPrefix("NOPERM") {
            // An ACL user without ROLE: the check cannot be made (the probe, published on the
            // master, still tells a link to another server).
            awaitingRole = false
            return
        }
        if awaitingRole, case .array(let answer) = reply {
            // ROLE's answer comes before any subscription's: the sentinels' address must be the master.
            awaitingRole = false
            let role = answer.first?.text
            if role != "master" {
                locator.masterRefused()
                drop(RedisError(.notMaster, "the address the sentinels named answers ROLE as \(role ?? "nothing"), not master"))
            }
            return
        }
        guard let elements = reply.elements, elements.count >= 3,
              case .bulk(let kindBytes) = elements[0], case .bulk(let channel) = elements[1]
        else {
            if !reconnector.isReady, case .status = reply { return }  // AUTH's OK
            let detail = if case .error(let line) = reply { line } else { "\(reply)" }
            drop(RedisError(reconnector.isReady ? .protocolViolation : .handshakeRefused, "unexpected reply on the pub/sub link: \(detail)"))
            return
        }
        switch String(decoding: kindBytes, as: UTF8.self) {
        case "message":
            guard case .bulk(let payload) = elements[2] else { return }
            if channel == probeChannel {
                guard payload == outstandingProbe else { return }
                outstandingProbe = nil
                probeTimer.schedule(after: timings.probeIntervalSeconds)
            } else if channels.contains(channel) {
                onMessage?(channel, payload)
            }
        case "subscribe":
            if channel == probeChannel, !reconnector.isReady { established() }
        default:
            break
        }
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        guard link === self.link else { return }
        drop(error)
    }
}
