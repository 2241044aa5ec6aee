import Foundation

/// A throwaway Redis Cluster for `rollcall-bench cluster --redis-cluster-masters N`: N masters
/// (no replicas: the bench measures cost, not failover), each a ``RedisServerProcess`` with
/// `cluster-enabled`, joined by `redis-cli --cluster create`, the 16384 slots split evenly.
final class RedisClusterProcesses: MeasuredRedis {
    let masters: [RedisServerProcess]

    /// `redis+cluster://127.0.0.1:<port>,…` (every master a seed), for `cluster.redis`.
    var url: String { "redis+cluster://" + masters.map { "127.0.0.1:\($0.port)" }.joined(separator: ",") }

    /// Starts `count` masters and creates the cluster; waits (up to 20 s) until every master
    /// says `cluster_state:ok`.
    init(binary: String, masters count: Int) throws {
        var started: [RedisServerProcess] = []
        do {
            for _ in 0..<count {
                // The bus on a free port of its own: by default it is the port + 10000, which
                // does not exist for a free port above 55535.
                started.append(try RedisServerProcess(binary: binary, extraArguments: [
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                    "--cluster-port", String(try FreePort.pick()),
                ]))
            }
            masters = started
            try create()
        } catch {
            for master in started { master.stop() }
            throw error
        }
    }

    private func create() throws {
        if masters.count == 1 {
            // `redis-cli --cluster create` wants 3 masters: one master takes every slot itself.
            guard masters[0].command(["CLUSTER", "ADDSLOTSRANGE", "0", "16383"])?.hasPrefix("OK") == true else {
                throw RedisServerProcess.RedisError(description: "CLUSTER ADDSLOTSRANGE failed on port \(masters[0].port)")
            }
        } else {
            let cli = Process()
            cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
            cli.arguments = ["--cluster", "create"] + masters.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", "0", "--cluster-yes"]
            cli.standardOutput = FileHandle.nullDevice
            cli.standardError = FileHandle.nullDevice
            try cli.run()
            cli.waitUntilExit()
            guard cli.terminationStatus == 0 else {
                throw RedisServerProcess.RedisError(description: "redis-cli --cluster create exited with \(cli.terminationStatus)")
            }
        }
        let deadline = MonotonicSeconds.now + 20
        while MonotonicSeconds.now < deadline {
            if masters.allSatisfy({ $0.command(["CLUSTER", "INFO"])?.contains("cluster_state:ok") == true }) { return }
            usleep(100_000)
        }
        throw RedisServerProcess.RedisError(description: "the Redis Cluster of \(masters.count) masters never reached cluster_state:ok")
    }

    var cpuSeconds: Double { masters.reduce(0) { $0 + $1.cpuSeconds } }
    var cpuSecondsPerServer: [Double] { masters.map(\.cpuSeconds) }
    func resetStats() { for master in masters { master.resetStats() } }
    func commandStats() -> CommandStats { masters.map { $0.commandStats() }.reduce(CommandStats(), +) }

    /// How many slots each master serves (`CLUSTER SHARDS` is 7.0+; `CLUSTER NODES` is older).
    var slotsPerMaster: [Int] {
        masters.map { master in
            let own = master.command(["CLUSTER", "NODES"])?.split(whereSeparator: \.isNewline).first { $0.contains("myself") }
            return own.map { line in
                line.split(separator: " ").dropFirst(8).reduce(0) { count, range in
                    let bounds = range.split(separator: "-").compactMap { Int($0) }
                    return count + (bounds.count == 2 ? bounds[1] - bounds[0] + 1 : bounds.count)
                }
            } ?? 0
        }
    }

    func stop() { for master in masters { master.stop() } }
}
