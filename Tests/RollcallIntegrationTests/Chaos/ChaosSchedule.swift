import Foundation
import RollcallTestSupport

/// The kinds of fault the chaos suite injects (issue 29, PROTOCOL §9 "Under faults").
enum FaultKind: String, CaseIterable, Sendable {
    /// `kill -9` of a node, started again (same id and port) after the fault's duration.
    case killNode = "kill-node"
    /// SIGSTOP of a node for longer than `cluster.nodeTimeoutSeconds`, then SIGCONT.
    case pauseNode = "pause-node"
    /// A node's Redis link cut at the proxy (connections ended, new ones refused), then restored.
    case cutLink = "cut-link"
    /// A node's Redis link frozen at the proxy (open, nothing crosses), then restored.
    case freezeLink = "freeze-link"
    /// Redis `SHUTDOWN` (the append-only file kept), started again after the fault's duration.
    case restartRedis = "restart-redis"
    /// SIGSTOP of Redis, then SIGCONT (on a Redis Cluster: of one master, drawn by the seed;
    /// stopped past `cluster-node-timeout`, its replica takes over).
    case pauseRedis = "pause-redis"
    /// Redis Cluster only: `kill -9` of one master, drawn by the seed (its replica is
    /// promoted), started again after the fault's duration (it comes back as a replica).
    case failoverRedis = "failover-redis"

    /// True for faults aimed at one node.
    var targetsNode: Bool { self != .restartRedis && self != .pauseRedis && self != .failoverRedis }

    /// The kinds a run on `redis` can inject: on a Redis Cluster the nodes reach every master
    /// at the address the cluster announces, so there is no proxy to cut or freeze, and a
    /// master's failure is a failover rather than a restart.
    static func kinds(for redis: ChaosRedis) -> [FaultKind] {
        switch redis {
        case .server: [.killNode, .pauseNode, .cutLink, .freezeLink, .restartRedis, .pauseRedis]
        case .cluster: [.killNode, .pauseNode, .failoverRedis, .pauseRedis]
        }
    }

    /// Parses a comma-separated list (`CHAOS_FAULTS`); nil for an unknown name.
    static func list(_ text: String) -> [FaultKind]? {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let kinds = names.compactMap(FaultKind.init(rawValue:))
        return kinds.count == names.count && !kinds.isEmpty ? kinds : nil
    }
}

/// Which Redis a chaos run's nodes share (`CHAOS_REDIS`).
enum ChaosRedis: String, Sendable {
    /// One redis-server with the append-only file, each node through its own proxy.
    case server
    /// A Redis Cluster of 3 masters with a replica each (`redis+cluster://`).
    case cluster
}

/// One fault of a schedule: what, on which node, when (seconds after the churn started) and
/// for how long.
struct Fault: CustomStringConvertible, Sendable {
    let kind: FaultKind
    /// The node (0-based) for node faults; nil for Redis faults.
    let node: Int?
    /// On a Redis Cluster, for Redis faults: which master, as a place in the masters' ports
    /// in order when the fault starts (the key groups spread over all of them; the first
    /// ones' slots include the control slot `{0}` or not, as the cluster laid them out).
    var master: Int? = nil
    let start: Double
    let duration: Double

    var description: String {
        let target = node.map { "n\($0 + 1)" } ?? master.map { "redis master \($0 + 1)" } ?? "redis"
        return String(format: "%6.2fs %@ %@ for %.2fs", start, kind.rawValue, target, duration)
    }
}

/// A seeded fault schedule: faults one after another with quiet gaps between them, each drawn
/// from `kinds` by a SplitMix64 seeded with the run's seed (so `CHAOS_SEED` replays it).
struct ChaosSchedule: CustomStringConvertible, Sendable {
    let seed: UInt64
    let faults: [Fault]
    /// Seconds of churn in all (the last fault healed before the end).
    let length: Double

    /// Faults until `length` seconds, on `nodeCount` nodes; pauses of a node outlast
    /// `nodeTimeoutSeconds`. No `kinds`: churn without faults.
    init(seed: UInt64, kinds: [FaultKind], length: Double, nodeCount: Int, nodeTimeoutSeconds: Double) {
        self.seed = seed
        self.length = length
        var random = SplitMix64(seed: seed ^ 0x5CED_F00D)
        func uniform(_ low: Double, _ high: Double) -> Double {
            low + (high - low) * Double(random.next() % 10_000) / 10_000
        }
        var faults: [Fault] = []
        var time = uniform(0.5, 1.2)
        while !kinds.isEmpty {
            let kind = kinds[Int(random.next() % UInt64(kinds.count))]
            let duration: Double
            switch kind {
            case .killNode: duration = uniform(0.3, nodeTimeoutSeconds + 2)  // back before or after it is declared dead
            case .pauseNode: duration = nodeTimeoutSeconds + uniform(0.3, 1.5)
            case .cutLink, .freezeLink: duration = uniform(0.3, nodeTimeoutSeconds + 2)
            case .restartRedis: duration = uniform(0.2, 1.5)
            case .pauseRedis: duration = uniform(0.3, nodeTimeoutSeconds + 2)
            case .failoverRedis: duration = uniform(0.5, nodeTimeoutSeconds + 2)
            }
            guard time + duration < length - 0.5 else { break }
            let node = kind.targetsNode ? Int(random.next() % UInt64(nodeCount)) : nil
            var fault = Fault(kind: kind, node: node, start: time, duration: duration)
            // Drawn only on a Redis Cluster (the kinds have failovers), so one redis-server's
            // schedules stay as they were for every seed.
            if !kind.targetsNode, kinds.contains(.failoverRedis) { fault.master = Int(random.next() % 3) }
            faults.append(fault)
            time += duration + uniform(0.4, 1.5)
        }
        self.faults = faults
    }

    var description: String {
        "seed \(seed), \(String(format: "%.1f", length)) s of churn, faults:" + (faults.isEmpty ? " none" : "\n")
            + faults.map { "  \($0)" }.joined(separator: "\n")
    }
}
