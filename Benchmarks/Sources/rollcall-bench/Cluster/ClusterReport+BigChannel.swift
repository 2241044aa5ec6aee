import Foundation

/// The joins into one big channel.
extension ClusterReport {
    func addBigJoins(_ result: inout BenchResult) {
        guard !bigJoins.isEmpty else { return }
        let f = BenchMetric.format
        var table = ["| setup | members | joins ok/failed | joins/s | Redis CPU µs/join | evalsha µs/join | evalsha calls/join | node CPU µs/join | bytes/join | leaves/s | Redis CPU µs/leave | node CPU µs/leave |",
                     "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for big in bigJoins {
            table.append("| \(big.setup) | \(big.members) | \(big.joins)/\(big.joinsFailed) | \(f(big.joinsPerSecond)) | "
                         + "\(f(big.redisMicrosPerJoin)) | \(f(big.evalshaMicrosPerJoin)) | "
                         + "\(f(Double(big.joinEvalshaCalls) / Double(max(1, big.joins)))) | \(f(big.brokerMicrosPerJoin)) | "
                         + "\(f(big.bytesPerJoin)) | \(f(big.leavesPerSecond)) | \(f(big.redisMicrosPerLeave)) | "
                         + "\(f(big.brokerMicrosPerLeave)) |")
            let name = "big channel (\(big.members) members), \(big.setup)"
            result.metrics.append(BenchMetric("\(name): joins per second", big.joinsPerSecond, "/s"))
            result.metrics.append(BenchMetric("\(name): Redis CPU per join", big.redisMicrosPerJoin, "µs"))
            result.metrics.append(BenchMetric("\(name): evalsha µs per join", big.evalshaMicrosPerJoin, "µs"))
            result.metrics.append(BenchMetric("\(name): node CPU per join", big.brokerMicrosPerJoin, "µs"))
            result.metrics.append(BenchMetric("\(name): Redis CPU per leave", big.redisMicrosPerLeave, "µs"))
        }
        result.notes.append("Joins into one big channel (presence on, interval mode): filled with the members spread over the "
                            + "nodes, then rounds of \(bigJoins[0].joinersPerRound) new sessions joining at once and leaving at once "
                            + "(\(bigJoins[0].rounds) rounds); joins/s counts from each round's first join to its last reply; CPU "
                            + "from the first request until the joiners were quiet (snapshots delivered), idle subtracted.\n\n"
                            + table.joined(separator: "\n"))
    }
}
