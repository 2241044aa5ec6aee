import RollcallCore
import RollcallEventLoop
import RollcallRedis

/// Where the ``ClusterLink`` sends the commands of a store call (docs/cluster.md, "The link
/// on Redis Cluster"):
///
/// - ``connection(_:)``: one Redis (a server, the master behind Sentinel, with or without
///   TLS): every command on one ``RedisConnection``, in order, as it always was.
/// - ``cluster(_:)``: a Redis Cluster (``RedisClusterClient``): a script goes to the master
///   of the slot of its declared keys (`StoreScript.keyCount`: the call's first arguments),
///   a plain command to the master of its key when it is one of ``keyedCommands``, and a
///   `PUBLISH <channel> <payload>` as `SPUBLISH` to the master of the channel's slot (a
///   shard channel, what the link's `SSUBSCRIBE` hears, ``EventSubscription``; on one Redis it
///   stays a `PUBLISH`, heard by `SUBSCRIBE`). A call with no key to route it by (a script
///   declaring none, a command not in the list) goes by `keyless` when there is one (with one
///   key group every key of the cluster is in one slot, the control tag's: ``ClusterKeys/controlTag``),
///   and is refused before anything is sent otherwise (``RedisError/Code/noKey``); a call with
///   keys of two slots is refused (``RedisError/Code/crossSlot``): no master is picked at random.
enum StoreRoute {
    case connection(RedisConnection)
    case cluster(RedisClusterClient, keyless: [UInt8]?)

    /// The route to `target`: one connection, or a Redis Cluster client whose keyless calls go
    /// to the slot of `keyless`.
    static func to(_ target: RedisTarget, loop: EventLoop, timings: RedisTimings, clientName: String?, tls: RedisTLSContext?,
                   keyless: String?) -> StoreRoute {
        if case .cluster(let seeds) = target {
            return .cluster(RedisClusterClient(seeds: seeds, loop: loop, timings: timings, clientName: clientName, tls: tls),
                            keyless: keyless.map { Array($0.utf8) })
        }
        return .connection(RedisConnection(target: target, loop: loop, timings: timings, clientName: clientName, tls: tls))
    }

    /// True while calls can be sent: the connection is up, or the cluster's map covers every
    /// slot and every master's connection is up.
    var isReady: Bool {
        switch self {
        case .connection(let connection): connection.state.isConnected
        case .cluster(let client, _): client.isReady
        }
    }

    func start() {
        switch self {
        case .connection(let connection): connection.start()
        case .cluster(let client, _): client.start()
        }
    }

    func close() {
        switch self {
        case .connection(let connection): connection.close()
        case .cluster(let client, _): client.close()
        }
    }

    /// Runs `script` (a link's own: the heartbeat, the start check, the webhook taker) with
    /// `arguments` as ``LuaScript/arguments(_:rest:)`` made them, routed as a store call's script.
    func run(_ script: LuaScript, arguments: [[UInt8]], completion: @escaping RedisConnection.Completion) {
        send(.script(script.store, arguments: arguments), as: { _ in script.redis }, completion: completion)
    }

    /// Runs `command`, a call of `script` as its Swift call builder made it, routed as a store
    /// call's script (the link's own loops reuse the engine's builders this way).
    func run(_ command: StoreCommand, of script: LuaScript, completion: @escaping RedisConnection.Completion) {
        send(command, as: { _ in script.redis }, completion: completion)
    }

    /// Sends one plain command, routed as a store call's.
    func send(_ words: [[UInt8]], completion: @escaping RedisConnection.Completion) {
        send(.command(words), as: { RedisScript($0.source) }, completion: completion)
    }

    /// Sends `command`; a script goes as `script` (the link's cached copy of it, with the
    /// link's prelude). `completion` runs on the loop's thread, in send order per connection
    /// (one Redis) or per slot (Redis Cluster).
    func send(_ command: StoreCommand, as script: (StoreScript) -> RedisScript, completion: @escaping RedisConnection.Completion) {
        switch (self, command) {
        case (.connection(let connection), .command(let words)):
            connection.send(words, completion: completion)
        case (.connection(let connection), .script(let store, let arguments)):
            script(store).run(on: connection, declaringKeys: store.keyCount, of: arguments, completion: completion)
        case (.cluster(let client, let keyless), .command(let words)):
            if let channel = Self.publishedChannel(of: words) {
                client.send([Array("SPUBLISH".utf8)] + words.dropFirst(), keys: [channel], completion: completion)
                return
            }
            guard let key = Self.key(of: words) ?? keyless else {
                let name = words.first.map { String(decoding: $0, as: UTF8.self) } ?? "an empty command"
                completion(.failure(RedisError(.noKey, "\(name) cannot be routed on Redis Cluster: the link sends a plain command only when its first argument is its one key (\(Self.keyedCommandList))")))
                return
            }
            client.send(words, keys: [key], completion: completion)
        case (.cluster(let client, let keyless), .script(let store, let arguments)):
            guard arguments.count >= store.keyCount else {
                completion(.failure(RedisError(.noKey, "the script \(store.name) was given fewer arguments than its \(store.keyCount) keys")))
                return
            }
            if store.keyCount == 0 {
                guard let keyless else {
                    completion(.failure(RedisError(.noKey, "the script \(store.name) declares no key: on Redis Cluster with more than one key group a script is routed by its declared keys only")))
                    return
                }
                // Routed by the one slot every key is in; the script declares none, which Redis
                // allows a script without a shebang on the master that serves the slot.
                client.run(script(store), keys: [], routedBy: keyless, arguments: arguments, completion: completion)
                return
            }
            client.run(script(store), keys: Array(arguments.prefix(store.keyCount)),
                       arguments: Array(arguments.dropFirst(store.keyCount)), completion: completion)
        }
    }

    /// The channel of a `PUBLISH <channel> <payload>` (exactly two arguments): on Redis Cluster
    /// it goes as `SPUBLISH`, routed by the channel; nil for any other command.
    static func publishedChannel(of words: [[UInt8]]) -> [UInt8]? {
        guard words.count == 3, String(decoding: words[0], as: UTF8.self).uppercased() == "PUBLISH" else { return nil }
        return words[1]
    }

    /// The plain commands the core sends whose first argument is their one key, upper case.
    static let keyedCommands: Set<String> = [
        "GET", "SET", "EXISTS", "DEL", "PTTL", "HGET", "HSET", "HEXISTS", "HSTRLEN", "HGETALL", "HMGET",
        "SMEMBERS", "SISMEMBER", "SCARD", "ZRANGE", "ZSCORE", "ZCARD", "ZADD", "ZREM", "XLEN",
    ]

    private static let keyedCommandList = keyedCommands.sorted().joined(separator: ", ")

    /// The key a plain command is routed by: its first argument, for ``keyedCommands`` with
    /// at least one argument; nil for any other (`DEL` and `EXISTS` of several keys included).
    static func key(of words: [[UInt8]]) -> [UInt8]? {
        guard words.count >= 2 else { return nil }
        let name = String(decoding: words[0], as: UTF8.self).uppercased()
        guard keyedCommands.contains(name), words.count == 2 || (name != "DEL" && name != "EXISTS") else { return nil }
        return words[1]
    }
}
