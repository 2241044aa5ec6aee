import ArgumentParser
import Foundation

/// `rollcall-bench faults`: timelines of faults under release nodes on redis-servers the bench
/// starts itself (issue 29, "The figures"): kill -9 of the node holding 10,000 sessions, Redis
/// stopped and Redis killed and restarted, and a Sentinel failover. Each as a table of seconds
/// from the fault, median and range over `--runs`, in Markdown on stdout (and `--markdown`).
/// A subcommand of its own rather than options on `cluster`: each fault needs its own Redis
/// (with AOF, or with Sentinel) and fresh nodes per run, none of `cluster`'s phases.
struct Faults: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fault timelines: kill -9 of a node with 10,000 sessions, Redis stopped / killed and restarted, Sentinel failover.")

    /// The faults, as `--only` names them.
    enum Kind: String, CaseIterable, ExpressibleByArgument {
        case kill, stop, restart, failover
    }

    @OptionGroup var broker: BrokerBinaryOption

    @Option(help: "redis-server binary (throwaway instances on free ports; also run as the sentinels).")
    var redisServer = "/usr/bin/redis-server"

    @Option(help: "Faults to run, comma-separated: kill, stop, restart, failover (default: all).")
    var only: String = Kind.allCases.map(\.rawValue).joined(separator: ",")

    @Option(help: "Runs of each fault.")
    var runs = 3

    @Option(help: "Sessions on the node killed by the kill fault.")
    var sessions = 10_000

    @Option(help: "Seconds Redis stays stopped (stop) or down (restart).")
    var outageSeconds = 5.0

    @Option(help: "Also write the tables (Markdown) to this file.")
    var markdown: String?

    func validate() throws {
        guard (1...20).contains(runs) else { throw ValidationError("--runs must be 1...20") }
        guard (1...15_000).contains(sessions) else { throw ValidationError("--sessions must be 1...15000") }
        guard outageSeconds > 0, outageSeconds <= 60 else { throw ValidationError("--outage-seconds must be in (0, 60]") }
        guard !kinds.isEmpty, kinds.count == only.split(separator: ",").count else {
            throw ValidationError("--only takes kill, stop, restart, failover, comma-separated")
        }
    }

    private var kinds: [Kind] { only.split(separator: ",").compactMap { Kind(rawValue: String($0)) } }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        try FileLimit.raise(to: sessions + 2_000)
        let binary = broker.path
        let apiKey = "faults-bench-key-" + UUID().uuidString.prefix(8)
        var tables: [String] = ["machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, load at start \(Cluster.loadAverage()); "
                                + "nodes: " + NodeGroup.configText(redis: nil) + " + cluster {heartbeatSeconds \(NodeGroup.heartbeatSeconds), "
                                + "nodeTimeoutSeconds \(NodeGroup.nodeTimeoutSeconds)}"]
        for kind in kinds {
            var timelines: [Timeline] = []
            var failures: [String] = []
            for index in 1...runs {
                print("faults: \(kind.rawValue) run \(index)/\(runs)")
                do {
                    switch kind {
                    case .kill:
                        timelines.append(try KillTimeline.run(binary: binary, redisServer: redisServer, sessions: sessions, apiKey: apiKey))
                    case .stop:
                        timelines.append(try OutageTimeline.run(.stop, seconds: outageSeconds, binary: binary, redisServer: redisServer))
                    case .restart:
                        timelines.append(try OutageTimeline.run(.kill, seconds: outageSeconds, binary: binary, redisServer: redisServer))
                    case .failover:
                        timelines.append(try FailoverTimeline.run(binary: binary, redisServer: redisServer))
                    }
                } catch {
                    print("faults: \(kind.rawValue) run \(index): NOT MEASURED: \(error)")
                    failures.append("run \(index): \(error)")
                }
            }
            var text = TimelineTable(title: title(kind), runs: timelines).markdown
            if !failures.isEmpty { text += "\n- not measured: " + failures.joined(separator: "; ") }
            print("\n" + text + "\n")
            tables.append(text)
        }
        tables.append("load at the end: \(Cluster.loadAverage())")
        if let markdown { try (tables.joined(separator: "\n\n") + "\n").write(toFile: markdown, atomically: true, encoding: .utf8) }
    }

    private func title(_ kind: Kind) -> String {
        switch kind {
        case .kill: "kill -9 of node A holding \(sessions) sessions (watched from node B)"
        case .stop: "Redis SIGSTOP for \(TimelineTable.format(outageSeconds)) s (3 nodes)"
        case .restart: "Redis kill -9, restarted after \(TimelineTable.format(outageSeconds)) s on its AOF (3 nodes)"
        case .failover: "Sentinel failover: kill -9 of the master (3 nodes, 1 replica, 3 sentinels)"
        }
    }
}

/// The per-process descriptor limit (one bench process holds every client socket).
enum FileLimit {
    /// Raises the soft RLIMIT_NOFILE to `wanted` (at most the hard limit); throws when the
    /// hard limit is lower.
    static func raise(to wanted: Int) throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_max >= rlim_t(wanted) else {
            throw ValidationError("the descriptor limit (hard \(limit.rlim_max)) is below the \(wanted) this run needs")
        }
        if limit.rlim_cur < rlim_t(wanted) {
            limit.rlim_cur = rlim_t(wanted)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
    }
}
