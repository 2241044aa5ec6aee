import Foundation

/// Redis with Sentinel for the failover timeline, on free loopback ports: a master, one
/// replica of it and three sentinels (`redis-server <conf> --sentinel`, what Debian's
/// `redis-sentinel` runs) with `down-after-milliseconds` 1000 and quorum 2. Killed by their
/// own PIDs at the end.
final class SentinelSet {
    let master: RedisInstance
    let replica: RedisInstance
    let sentinels: [RedisInstance]
    let masterName: String

    /// `redis+sentinel://…/<masterName>` for `cluster.redis`.
    var url: String { "redis+sentinel://" + sentinels.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") + "/" + masterName }

    /// Starts them all and waits (up to 30 s) until the replica is in sync and every sentinel
    /// knows the replica and the two other sentinels (a failover needs both).
    init(binary: String) throws {
        masterName = "bench" + UUID().uuidString.prefix(6).lowercased()
        master = try RedisInstance(binary: binary, arguments: ["--save", "", "--appendonly", "no"])
        var started: [RedisInstance] = [master]
        do {
            replica = try RedisInstance(binary: binary, arguments: ["--save", "", "--appendonly", "no",
                                                                    "--replicaof", "127.0.0.1", "\(master.port)"])
            started.append(replica)
            var sentinels: [RedisInstance] = []
            for _ in 0..<3 {
                sentinels.append(try Self.sentinel(binary: binary, masterName: masterName, masterPort: master.port))
                started.append(sentinels.last!)
            }
            self.sentinels = sentinels
        } catch {
            for instance in started { instance.stop() }
            throw error
        }
        let deadline = MonotonicSeconds.now + 30
        while MonotonicSeconds.now < deadline {
            if master.command(["WAIT", "1", "100"])?.hasPrefix("1") == true,
               sentinels.allSatisfy({ sentinel in
                   Self.count(sentinel.command(["SENTINEL", "replicas", masterName])) == 1
                       && Self.count(sentinel.command(["SENTINEL", "sentinels", masterName])) == 2
               }) { return }
            usleep(100_000)
        }
        stop()
        throw RedisServerProcess.RedisError(description: "the sentinels never saw the replica and each other")
    }

    /// The port the first sentinel that answers names as master now (nil: none answered).
    func masterPort() -> Int? {
        for sentinel in sentinels {
            guard let reply = sentinel.command(["SENTINEL", "get-master-addr-by-name", masterName]) else { continue }
            let lines = reply.split(whereSeparator: \.isNewline)
            if lines.count >= 2, let port = Int(lines[1]) { return port }
        }
        return nil
    }

    /// True once any sentinel logged `+switch-master` (the promotion).
    var switchedMaster: Bool { sentinels.contains { $0.log.contains("+switch-master") } }

    func stop() {
        for sentinel in sentinels { sentinel.stop() }
        replica.stop()
        master.stop()
    }

    /// One sentinel, its config file in its own directory (Sentinel rewrites it).
    private static func sentinel(binary: String, masterName: String, masterPort: Int) throws -> RedisInstance {
        try RedisInstance(binary: binary, arguments: ["--sentinel"], configLines: [
            "sentinel monitor \(masterName) 127.0.0.1 \(masterPort) 2",
            "sentinel down-after-milliseconds \(masterName) 1000",
            "sentinel failover-timeout \(masterName) 3000",
            "sentinel parallel-syncs \(masterName) 1",
        ])
    }

    /// The number of entries in redis-cli's answer to an array command (a blank line between
    /// entries of nested arrays is not printed: count the `name` fields).
    private static func count(_ reply: String?) -> Int {
        guard let reply else { return -1 }
        return reply.split(whereSeparator: \.isNewline).filter { $0 == "name" }.count
    }
}
