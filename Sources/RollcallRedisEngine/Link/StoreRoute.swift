import RollcallCore
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
///   declaring none, a command not in the list) or with keys of two slots is refused before
///   anything is sent (``RedisError/Code/noKey``, ``RedisError/Code/crossSlot``): no master is
///   picked at random.
enum StoreRoute {
    case connection(RedisConnection)
    case cluster(RedisClusterClient)

    /// Sends `command`; a script goes as `script` (the link's cached copy of it, with the
    /// link's prelude). `completion` runs on the loop's thread, in send order per connection
    /// (one Redis) or per slot (Redis Cluster).
    func send(_ command: StoreCommand, as script: (StoreScript) -> RedisScript, completion: @escaping RedisConnection.Completion) {
        switch (self, command) {
        case (.connection(let connection), .command(let words)):
            connection.send(words, completion: completion)
        case (.connection(let connection), .script(let store, let arguments)):
            script(store).run(on: connection, declaringKeys: store.keyCount, of: arguments, completion: completion)
        case (.cluster(let client), .command(let words)):
            if let channel = Self.publishedChannel(of: words) {
                client.send([Array("SPUBLISH".utf8)] + words.dropFirst(), keys: [channel], completion: completion)
                return
            }
            guard let key = Self.key(of: words) else {
                let name = words.first.map { String(decoding: $0, as: UTF8.self) } ?? "an empty command"
                completion(.failure(RedisError(.noKey, "\(name) cannot be routed on Redis Cluster: the link sends a plain command only when its first argument is its one key (\(Self.keyedCommandList))")))
                return
            }
            client.send(words, keys: [key], completion: completion)
        case (.cluster(let client), .script(let store, let arguments)):
            guard store.keyCount > 0, arguments.count >= store.keyCount else {
                completion(.failure(RedisError(.noKey, "the script \(store.name) declares no key: on Redis Cluster a script is routed by its declared keys only")))
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
