import RollcallRedis

/// How the ``ClusterLink`` hears the channels the core listens to (docs/cluster.md, "The link
/// on Redis Cluster"):
///
/// - ``plain(_:)``: one Redis: `SUBSCRIBE` on one ``RedisSubscriber`` (the scripts `PUBLISH`).
/// - ``sharded(_:)``: a Redis Cluster: `SSUBSCRIBE` on the master of each channel's slot
///   through a ``RedisShardedSubscriber`` (the scripts `SPUBLISH`, ``EventPublishing``).
///
/// Either way a lost subscription ends in ``ClusterLink``'s one "compare `seq`" path
/// (`storeResubscribed`), and each pub/sub link is probed (``SubscriberProbe``).
enum EventSubscription {
    case plain(RedisSubscriber)
    case sharded(RedisShardedSubscriber)

    func subscribe(_ channel: [UInt8]) {
        switch self {
        case .plain(let subscriber): subscriber.subscribe(channel)
        case .sharded(let subscriber): subscriber.subscribe(channel)
        }
    }

    func unsubscribe(_ channel: [UInt8]) {
        switch self {
        case .plain(let subscriber): subscriber.unsubscribe(channel)
        case .sharded(let subscriber): subscriber.unsubscribe(channel)
        }
    }

    /// Messages on subscribed channels.
    func onMessage(_ handler: @escaping (_ channel: [UInt8], _ payload: [UInt8]) -> Void) {
        switch self {
        case .plain(let subscriber): subscriber.onMessage = handler
        case .sharded(let subscriber): subscriber.onMessage = handler
        }
    }

    /// True while every channel is subscribed on a live, probed link.
    var isUp: Bool {
        switch self {
        case .plain(let subscriber): subscriber.state.isConnected
        case .sharded(let subscriber): subscriber.isUp
        }
    }

    func start() {
        switch self {
        case .plain(let subscriber): subscriber.start()
        case .sharded(let subscriber): subscriber.start()
        }
    }

    func close() {
        switch self {
        case .plain(let subscriber): subscriber.close()
        case .sharded(let subscriber): subscriber.close()
        }
    }
}

/// Which command the scripts publish a channel's events with: `PUBLISH` on one Redis (what
/// a `SUBSCRIBE` hears), `SPUBLISH` on Redis Cluster (a shard channel in the channel's slot,
/// what an `SSUBSCRIBE` on that slot's master hears). The link puts ``prelude(sharded:)``
/// before every script it runs; the scripts call `redis.call(publishCommand, ch.events, …)`.
enum EventPublishing {
    /// The Lua line that names the command: `local publishCommand = 'PUBLISH'` or `'SPUBLISH'`.
    static func prelude(sharded: Bool) -> String {
        sharded ? "local publishCommand = 'SPUBLISH'\n" : "local publishCommand = 'PUBLISH'\n"
    }
}
