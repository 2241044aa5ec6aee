import RollcallEventLoop

/// The pub/sub connection: its own link in subscribed mode, on the same loop.
/// Use it on the loop's thread only.
///
/// - It goes where its ``publisher`` goes, found again at every connect (the publisher's
///   ``RedisLocator``: a resolved host name; with Sentinel, the master the sentinels name
///   now, checked with `ROLE` before subscribing).
/// - ``subscribe(_:)`` / ``unsubscribe(_:)`` change the channel set (binary names); the set
///   outlives links: after any loss a new link subscribes every channel again, then
///   ``onResubscribed`` runs (compare what may have been missed then).
/// - Probe (``SubscriberProbe``): every ``RedisTimings/probeIntervalSeconds`` a token is
///   `PUBLISH`ed, through the command connection, to a channel only this link is subscribed
///   to. No receiver, or no message within ``RedisTimings/timeoutSeconds``: the link is
///   declared down and replaced.
public final class RedisSubscriber {
    /// A message on a subscribed channel: `(channel, payload)`.
    public var onMessage: ((_ channel: [UInt8], _ payload: [UInt8]) -> Void)?
    /// Called on each change between connected and disconnected.
    public var onStateChange: ((RedisConnectionState) -> Void)?
    /// Called each time a link is up with every channel of the set subscribed — after the
    /// first connect and after every reconnect. Messages published while no link was
    /// subscribed are lost: compare state (e.g. `seq`s) here.
    public var onResubscribed: (() -> Void)?
    /// Called with each channel of the set whose `SUBSCRIBE` Redis confirmed on the current
    /// link: from here on every message published to it arrives (one published before may
    /// not have). After a reconnect, once per channel again.
    public var onSubscribed: ((_ channel: [UInt8]) -> Void)?
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

    private var locator: RedisLocator { publisher.locator }
    /// Bumped at each connect and at close: a late answer of the locator is ignored.
    /// True from sending `ROLE` on a new link until its answer (Sentinel).
    private var awaitingRole = false
    /// The current link (the probe's).
    private var link: RedisLink? { probe.link }
    /// Where ``link`` goes.
    private var linkAddress: RedisHostPort?
    private let reconnector: RedisReconnector
    /// The current link, its subscription's deadline, then its probe rounds.
    private let probe: SubscriberProbe
    /// Channels per `SUBSCRIBE` command when a link subscribes the whole set.
    private static let channelsPerCommand = 512

    /// A subscriber on `loop` to the Redis `publisher` goes to, probing through it; probe
    /// channels are named `probeChannelPrefix` + a random id per link (put the cluster's
    /// `keyPrefix` in it). Nothing happens until ``start()``.
    public init(loop: EventLoop, publisher: RedisConnection,
                probeChannelPrefix: String = "rollcall:probe:", timings: RedisTimings = RedisTimings()) {
        self.publisher = publisher
        self.timings = timings
        reconnector = RedisReconnector(loop: loop, timings: timings)
        probe = SubscriberProbe(loop: loop, timings: timings, channelPrefix: Array(probeChannelPrefix.utf8),
                                place: publisher.target.description) { publisher }
        probe.onFailure = { [unowned self] error in drop(error) }
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
        probe.stop()
        reconnector.close(RedisError(.closed, "the subscriber was closed"))
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
        probe.begin(on: link)
        linkAddress = endpoint.address
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
        link.send([Array("SUBSCRIBE".utf8), probe.channel])
    }

    private func established() {
        probe.established()
        reconnector.ready()
        onResubscribed?()
    }

    /// Takes the current link down, reports the state and schedules a reconnect
    /// (``RedisLinkLifecycle/lost(_:now:)``).
    private func drop(_ error: RedisError) {
        probe.stop()
        reconnector.lost(error)
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
        let kind = String(decoding: kindBytes, as: UTF8.self)
        if let push = probe.take(kind, on: channel, elements) {
            if push == .subscribed, !reconnector.isReady { established() }
            return
        }
        if kind == "subscribe" {
            if channels.contains(channel) { onSubscribed?(channel) }
            return
        }
        guard kind == "message", case .bulk(let payload) = elements[2], channels.contains(channel) else { return }
        onMessage?(channel, payload)
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        guard link === self.link else { return }
        drop(error)
    }
}
