/// The Redis a cost phase measures: one `redis-server` (``RedisServerProcess``) or every master
/// of a Redis Cluster (``RedisClusterProcesses``). CPU from schedstat, command statistics from
/// `INFO commandstats`, each added up over the servers, and each server's own CPU for the
/// spread across masters.
protocol MeasuredRedis: AnyObject {
    /// CPU seconds so far, every server added up.
    var cpuSeconds: Double { get }
    /// CPU seconds so far of each server (one entry for one `redis-server`).
    var cpuSecondsPerServer: [Double] { get }
    /// `CONFIG RESETSTAT` on every server.
    func resetStats()
    /// `INFO commandstats` of every server, added up.
    func commandStats() -> CommandStats
}

extension RedisServerProcess: MeasuredRedis {
    var cpuSecondsPerServer: [Double] { [cpuSeconds] }
    func resetStats() { command(["CONFIG", "RESETSTAT"]) }
    func commandStats() -> CommandStats { CommandStats(info: command(["INFO", "commandstats"]) ?? "") }
}

extension CommandStats {
    /// The statistics of two servers, added up per command.
    static func + (left: CommandStats, right: CommandStats) -> CommandStats {
        var sum = left
        for (name, entry) in right.entries {
            sum.add(name, entry)
        }
        return sum
    }
}
