import RollcallEventLoop

/// Sharded pub/sub on a Redis Cluster (Redis 7: `SSUBSCRIBE`, published with `SPUBLISH`): each
/// channel is subscribed on the master that serves its slot, through one ``RedisShardLink``
/// per master, and follows its slot. Loop thread only.
///
/// - A channel's master comes from the ``RedisClusterClient``'s slot map; channels wait until
///   there is one.
/// - A failover (the link to the dead master goes down; the map names the promoted replica), a
///   slot that moved (`-MOVED` on `SSUBSCRIBE`, or the `sunsubscribe` Redis pushes when the slot
///   leaves its master) or any new map: the channels go to the master the map names now and
///   are subscribed there again.
/// - ``onResubscribed`` runs with the channels that were just subscribed on a link that is up
///   (after each connect, move or addition): messages published while they were not may be
///   lost, so compare state (`seq`) for those channels there, as with ``RedisSubscriber``.
/// - Each link is probed through the client's command connection to the same master.
/// - With `rediss+cluster://` the links speak TLS with the client's ``RedisClusterClient/tls``.
public final class RedisShardedSubscriber {
    /// A message on a subscribed channel: `(channel, payload)`.
    public var onMessage: ((_ channel: [UInt8], _ payload: [UInt8]) -> Void)?
    /// Called with channels just (re)subscribed on a live link: compare what may have been missed.
    public var onResubscribed: ((_ channels: Set<[UInt8]>) -> Void)?
    /// The channels subscribed (or to be, once their master's link is up).
    public private(set) var channels: Set<[UInt8]> = []
    /// The cluster client whose map places the channels and whose connections carry the probes.
    public let client: RedisClusterClient

    private let loop: EventLoop
    private let timings: RedisTimings
    private let probePrefix: [UInt8]
    private var links: [RedisHostPort: RedisShardLink] = [:]
    /// Where each channel is subscribed (or being): absent while it waits for a master.
    private var placement: [[UInt8]: RedisHostPort] = [:]
    private var isClosed = false

    /// A subscriber on `loop` following `client`'s slot map (it chains itself to the client's
    /// ``RedisClusterClient/onMapChange``); probe channels are `probeChannelPrefix` + a random
    /// id per link. Nothing happens until ``start()``.
    public init(client: RedisClusterClient, loop: EventLoop, probeChannelPrefix: String = "rollcall:probe:",
                timings: RedisTimings = RedisTimings()) {
        self.client = client
        self.loop = loop
        self.timings = timings
        probePrefix = Array(probeChannelPrefix.utf8)
    }

    /// Starts following the client's map (start the client too).
    public func start() {
        let previous = client.onMapChange
        client.onMapChange = { [weak self] map in
            previous?(map)
            self?.place(everyChannelBy: map)
        }
        if let map = client.map { place(everyChannelBy: map) }
    }

    /// Adds `channel` and subscribes it on its slot's master.
    public func subscribe(_ channel: [UInt8]) {
        guard !isClosed, channels.insert(channel).inserted else { return }
        place(channel, on: client.map?.master(of: RedisClusterSlot.of(channel)))
    }

    /// Removes `channel` and unsubscribes it.
    public func unsubscribe(_ channel: [UInt8]) {
        guard channels.remove(channel) != nil, let master = placement.removeValue(forKey: channel) else { return }
        links[master]?.remove([channel])
    }

    /// ``subscribe(_:)`` with a text name (UTF-8).
    public func subscribe(_ channel: String) { subscribe(Array(channel.utf8)) }

    /// ``unsubscribe(_:)`` with a text name (UTF-8).
    public func unsubscribe(_ channel: String) { unsubscribe(Array(channel.utf8)) }

    /// True when every channel is placed on a master whose link is up.
    public var isUp: Bool {
        channels.allSatisfy { placement[$0].flatMap { links[$0]?.isUp } == true }
    }

    /// Closes every link for good.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        let open = links.values
        links.removeAll()
        for link in open { link.close() }
    }

    // MARK: Placement

    private func place(everyChannelBy map: RedisClusterSlotMap) {
        guard !isClosed else { return }
        for channel in channels {
            place(channel, on: map.master(of: RedisClusterSlot.of(channel)))
        }
        for (master, link) in links where !map.masters.contains(master) && link.channels.isEmpty {
            links[master] = nil
            link.close()
        }
    }

    /// Puts `channel` on `master`'s link (leaving the one it was on), or leaves it waiting for a map.
    private func place(_ channel: [UInt8], on master: RedisHostPort?) {
        let current = placement[channel]
        if let current, current == master, links[current]?.channels.contains(channel) == true { return }
        if let current, current != master { links[current]?.remove([channel]) }
        placement[channel] = master
        guard let master else { return }
        link(to: master).add([channel])
    }

    private func link(to master: RedisHostPort) -> RedisShardLink {
        if let known = links[master] { return known }
        let link = RedisShardLink(master: master, endpoint: client.seeds.node(at: master), owner: self, loop: loop,
                                  timings: timings, tls: client.tls, probeChannelPrefix: probePrefix) { [weak self] in
            self?.client.connection(toMaster: master)
        }
        links[master] = link
        link.start()
        return link
    }
}

extension RedisShardedSubscriber: RedisShardLinkOwner {
    func shardLink(_ link: RedisShardLink, message payload: [UInt8], on channel: [UInt8]) {
        guard links[link.master] === link, placement[channel] == link.master else { return }
        onMessage?(channel, payload)
    }

    func shardLink(_ link: RedisShardLink, subscribed channels: Set<[UInt8]>) {
        guard links[link.master] === link else { return }
        let ours = channels.filter { placement[$0] == link.master }
        if !ours.isEmpty { onResubscribed?(Set(ours)) }
    }

    func shardLink(_ link: RedisShardLink, lost lostChannels: Set<[UInt8]>, movedTo to: RedisHostPort?) {
        guard links[link.master] === link else { return }
        client.refreshMap()
        for channel in lostChannels where channels.contains(channel) && placement[channel] == link.master {
            // MOVED names the new master. After a sunsubscribe push the map may still name this
            // one: subscribing there again is answered MOVED (to the new master) if it moved.
            place(channel, on: to ?? client.map?.master(of: RedisClusterSlot.of(channel)))
        }
    }

    func shardLinkWentDown(_ link: RedisShardLink, _ error: RedisError) {
        guard links[link.master] === link else { return }
        client.refreshMap()
    }
}
