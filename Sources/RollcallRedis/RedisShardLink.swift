import RollcallEventLoop

/// What a ``RedisShardLink`` reports to its ``RedisShardedSubscriber``, on the loop's thread.
protocol RedisShardLinkOwner: AnyObject {
    /// A message on a shard channel of the link.
    func shardLink(_ link: RedisShardLink, message payload: [UInt8], on channel: [UInt8])
    /// `channels` were just subscribed on a link that is up: every channel of the link after a
    /// connect, else the ones added since the last report, once confirmed. Messages published
    /// to them while they were not subscribed may be lost.
    func shardLink(_ link: RedisShardLink, subscribed channels: Set<[UInt8]>)
    /// The master refused `channels` with `-MOVED` (their slot is served by `to`), or pushed
    /// `sunsubscribe` for them (their slot left it: `to` is nil). They left the link.
    func shardLink(_ link: RedisShardLink, lost channels: Set<[UInt8]>, movedTo to: RedisHostPort?)
    /// The link went down (its channels stay on it and are subscribed again at the reconnect).
    func shardLinkWentDown(_ link: RedisShardLink, _ error: RedisError)
}

/// One master's pub/sub link for sharded pub/sub (`SSUBSCRIBE`), reconnecting with backoff,
/// probed like ``RedisSubscriber``'s (``SubscriberProbe``: a `PUBLISH` of a token through the
/// client's connection to the same master, on a plain channel only this link subscribes).
/// Loop thread only.
///
/// The link subscribes its probe channel first (a plain `SUBSCRIBE`), then its shard channels
/// with `SSUBSCRIBE` alone (``RedisLink`` hands it every reply in order: pushes and
/// `SSUBSCRIBE`'s `-MOVED` alike). Channels of one slot are sent many per command.
final class RedisShardLink {
    /// The master this link goes to.
    let master: RedisHostPort
    /// The channels wanted on this link.
    private(set) var channels: Set<[UInt8]> = []
    /// True while the link is up with its probe channel subscribed.
    var isUp: Bool { reconnector.isReady }

    private weak var owner: RedisShardLinkOwner?
    private let locator: RedisLocator
    private let reconnector: RedisReconnector
    /// The current link, its subscription's deadline, then its probe rounds.
    private let probe: SubscriberProbe
    private var link: RedisLink? { probe.link }
    /// Channels sent with `SSUBSCRIBE` and not confirmed yet.
    private var awaiting: Set<[UInt8]> = []
    /// Channels sent with `SSUBSCRIBE` on the current link and not reported to the owner yet:
    /// a report names only them, so that a channel added to a live link does not report the
    /// link's other channels (which missed nothing) as subscribed again.
    private var unreported: Set<[UInt8]> = []
    /// Channels this link sent `SUNSUBSCRIBE` for (their `sunsubscribe` is no loss).
    private var leaving: Set<[UInt8]> = []
    private static let channelsPerCommand = 256

    /// A link to `endpoint` (the master at `master`; over TLS with `tls` for a `rediss` one),
    /// reporting to `owner`, its probes published through what `publisher` returns (the
    /// command connection to the same master); nothing happens until ``start()``.
    init(master: RedisHostPort, endpoint: RedisEndpoint, owner: RedisShardLinkOwner, loop: EventLoop, timings: RedisTimings,
         tls: RedisTLSContext? = nil, probeChannelPrefix: [UInt8], publisher: @escaping () -> RedisConnection?) {
        self.master = master
        self.owner = owner
        locator = RedisLocator(target: .server(endpoint), loop: loop, timeoutSeconds: timings.timeoutSeconds, tls: tls)
        reconnector = RedisReconnector(loop: loop, timings: timings)
        probe = SubscriberProbe(loop: loop, timings: timings, channelPrefix: probeChannelPrefix, place: master.description,
                                publisher: publisher)
        probe.onFailure = { [unowned self] error in drop(error) }
        reconnector.bringUp = { [unowned self] in
            reconnector.locate(with: locator) { [weak self] endpoint in self?.open(endpoint) }
        }
        reconnector.notify = { [unowned self] state in
            if case .disconnected(let error) = state { self.owner?.shardLinkWentDown(self, error) }
        }
    }

    /// Starts the first connect.
    func start() { reconnector.start() }

    /// Adds `channels` to the link, subscribing them now when it is up.
    func add(_ added: Set<[UInt8]>) {
        let fresh = added.subtracting(channels)
        guard !fresh.isEmpty else { return }
        channels.formUnion(fresh)
        leaving.subtract(fresh)
        if link != nil { send(fresh) }
    }

    /// Removes `channels` from the link, unsubscribing them now when it is up.
    func remove(_ removed: Set<[UInt8]>) {
        let gone = removed.intersection(channels)
        guard !gone.isEmpty else { return }
        channels.subtract(gone)
        awaiting.subtract(gone)
        unreported.subtract(gone)
        guard let link else { return }
        leaving.formUnion(gone)
        for batch in Self.batches(gone) {
            link.send([Array("SUNSUBSCRIBE".utf8)] + batch)
        }
    }

    /// Closes the link for good.
    func close() {
        guard !reconnector.isClosed else { return }
        probe.stop()
        reconnector.close(RedisError(.closed, "the shard link was closed"))
        locator.close()
    }

    // MARK: Link

    private func open(_ endpoint: RedisEndpoint) {
        guard let link = reconnector.makeLink(to: endpoint, with: locator, reportingTo: self) else { return }
        probe.begin(on: link)
        awaiting.removeAll()
        unreported.removeAll()
        leaving.removeAll()
        if let auth = endpoint.authArguments { link.send(auth) }
        // The probe channel first: its confirmation makes the link up; the shard channels'
        // confirmations follow, one by one (`awaiting`).
        link.send([Array("SUBSCRIBE".utf8), probe.channel])
        send(channels)
    }

    /// `SSUBSCRIBE` for `channels`, a batch per command.
    private func send(_ channels: Set<[UInt8]>) {
        guard let link, !channels.isEmpty else { return }
        awaiting.formUnion(channels)
        unreported.formUnion(channels)
        for batch in Self.batches(channels) {
            link.send([Array("SSUBSCRIBE".utf8)] + batch)
        }
    }

    private func confirmed(_ channel: [UInt8]) {
        guard awaiting.remove(channel) != nil, awaiting.isEmpty, reconnector.isReady else { return }
        reportSubscribed()
    }

    /// Tells the owner the channels subscribed since the last report (none: nothing to tell).
    private func reportSubscribed() {
        let subscribed = unreported.intersection(channels)
        unreported.removeAll()
        if !subscribed.isEmpty { owner?.shardLink(self, subscribed: subscribed) }
    }

    private func established() {
        probe.established()
        reconnector.ready()
        if awaiting.isEmpty { reportSubscribed() }
    }

    /// `-MOVED slot host:port` for an `SSUBSCRIBE`: its channels of that slot leave the link.
    private func refused(_ line: String) -> Bool {
        guard case .moved(let slot, let to)? = RedisClusterRedirect(errorLine: line, answeredBy: master) else { return false }
        let moved = Set(awaiting.filter { RedisClusterSlot.of($0) == slot })
        channels.subtract(moved)
        awaiting.subtract(moved)
        unreported.subtract(moved)
        owner?.shardLink(self, lost: moved, movedTo: to)
        if awaiting.isEmpty, reconnector.isReady { reportSubscribed() }
        return true
    }

    private func serverUnsubscribed(_ channel: [UInt8]) {
        if leaving.remove(channel) != nil { return }
        guard channels.remove(channel) != nil else { return }
        awaiting.remove(channel)
        owner?.shardLink(self, lost: [channel], movedTo: nil)
    }

    private func drop(_ error: RedisError) {
        probe.stop()
        reconnector.lost(error)
    }

    /// `channels` in commands of at most ``channelsPerCommand`` names, one slot per command
    /// (Redis Cluster refuses `SSUBSCRIBE` across slots).
    private static func batches(_ channels: Set<[UInt8]>) -> [[[UInt8]]] {
        var batches: [[[UInt8]]] = []
        for (_, ofSlot) in Dictionary(grouping: channels, by: RedisClusterSlot.of) {
            var start = 0
            while start < ofSlot.count {
                batches.append(Array(ofSlot[start..<min(start + channelsPerCommand, ofSlot.count)]))
                start += channelsPerCommand
            }
        }
        return batches
    }
}

extension RedisShardLink: RedisLinkDelegate {
    func link(_ link: RedisLink, received reply: RedisReply) {
        guard link === self.link else { return }
        switch reply {
        case .status:
            return  // AUTH's OK
        case .error(let line):
            if refused(line) { return }
            drop(RedisError(reconnector.isReady ? .errorReply : .handshakeRefused, "the shard pub/sub link at \(master): \(line)"))
            return
        default:
            break
        }
        guard let elements = reply.elements, elements.count >= 2,
              case .bulk(let kindBytes) = elements[0], case .bulk(let channel) = elements[1]
        else {
            drop(RedisError(.protocolViolation, "unexpected reply on the shard pub/sub link at \(master): \(reply)"))
            return
        }
        let kind = String(decoding: kindBytes, as: UTF8.self)
        if let push = probe.take(kind, on: channel, elements) {
            if push == .subscribed, !reconnector.isReady { established() }
            return
        }
        switch kind {
        case "smessage":
            guard elements.count >= 3, case .bulk(let payload) = elements[2], channels.contains(channel) else { return }
            owner?.shardLink(self, message: payload, on: channel)
        case "ssubscribe":
            confirmed(channel)
        case "sunsubscribe":
            serverUnsubscribed(channel)
        default:
            break
        }
    }

    func link(_ link: RedisLink, failed error: RedisError) {
        guard link === self.link else { return }
        drop(error)
    }
}
