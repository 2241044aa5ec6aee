import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallRedisEngine
import RollcallTestSupport

/// What a chaos run is asked to do.
struct ChaosOptions: Sendable {
    /// The Redis the nodes share.
    var redis: ChaosRedis = .server
    /// The kinds of fault a schedule draws from.
    var kinds: [FaultKind] = FaultKind.kinds(for: .server)
    /// Seconds of churn (faults come and go within it).
    var churnSeconds: Double = 14
    /// Churning users (two per node at the start, more wrap around); three watchers come on top.
    var churners = 6
    /// Whether the webhook check runs (the roster rebuilt from the webhooks).
    var checkWebhooks = true
    /// Whether a message seen twice (or out of order) is a violation.
    var checkMessages = true
    /// How long, after every fault is healed, the cluster has to settle and agree.
    var quietSeconds: Double = 15
    /// `cluster.nodeTimeoutSeconds` of the nodes (pauses of a node outlast it).
    var nodeTimeoutSeconds = 1.0
    /// The command that replays a seed, `{seed}` standing for it; nil: `make chaos`'s.
    var replay: String? = nil
}

/// What one chaos run found.
struct ChaosResult: Sendable {
    let seed: UInt64
    let intervalMode: Bool
    let schedule: ChaosSchedule
    /// Broken invariants, webhooks aside.
    let violations: [ChaosViolation]
    /// The webhook check's own findings (reported apart; empty when it is off).
    let webhookViolations: [ChaosViolation]
    let stats: ChaosClient.Stats
    /// Invariant checks evaluated in the final pass.
    let checks: Int
    /// Seconds from the start of the cluster to the end of the checks.
    let seconds: Double
    /// The full report of a run with findings: schedule, violations, histories, replay line.
    let report: String

    var passed: Bool { violations.isEmpty }
}

/// One seeded chaos run: a fresh cluster, clients churning on every node while the schedule's
/// faults come and go, then everything healed, the clients settled, and the invariants of
/// ``ChaosChecks`` checked once the cluster is quiet (or its deadline has passed).
enum ChaosRun {
    static let channels = ["c0", "c1", "c2"]
    static let platforms = ["web", "ios", "android", "macos", "linux", "cli"]

    /// The client runtime every chaos run uses (its own service thread, apart from the
    /// shared one the other suites use).
    static let runtime: ClientRuntime = {
        do { return try ClientRuntime() } catch { fatalError("chaos: no client runtime: \(error)") }
    }()

    static func run(seed: UInt64, options: ChaosOptions) throws -> ChaosResult {
        let began = Date()
        let intervalMode = seed % 2 == 1
        let schedule = ChaosSchedule(seed: seed, kinds: options.kinds, length: options.churnSeconds, nodeCount: 3,
                                     nodeTimeoutSeconds: options.nodeTimeoutSeconds)
        let cluster = try ChaosCluster(intervalMode: intervalMode, nodeTimeoutSeconds: options.nodeTimeoutSeconds, redis: options.redis)
        defer { cluster.stop() }
        let clock = ChaosClock()
        var clients: [ChaosClient] = []
        for index in 0..<3 {
            clients.append(ChaosClient(userId: "w\(index + 1)", role: .watcher, platform: "web", channels: channels,
                                       cluster: cluster, clock: clock, runtime: runtime, seed: seed &+ UInt64(index) &* 7919, node: index,
                                       checkMessages: options.checkMessages))
        }
        for index in 0..<options.churners {
            clients.append(ChaosClient(userId: "u\(index + 1)", role: .churner, platform: platforms[index % platforms.count],
                                       channels: channels, cluster: cluster, clock: clock, runtime: runtime,
                                       seed: seed &+ UInt64(100 + index) &* 7919, node: index % 3,
                                       checkMessages: options.checkMessages))
        }
        // Watchers join every channel before the churn, so they see every event from the start.
        for watcher in clients where watcher.role == .watcher {
            _ = eventually(timeout: 10) {
                watcher.step(interruptible: false)
                return watcher.isSettled
            }
        }

        let log = ChaosRunLog()
        let mark: @Sendable (String) -> Void = { text in log.mark("\(clock.stamp()) \(text)") }
        mark("clock started at \(ISO8601DateFormatter().string(from: clock.started)) (the nodes' logs are in UTC)")
        let group = DispatchGroup()
        for client in clients {
            group.enter()
            Thread {
                client.run()
                group.leave()
            }.start()
        }
        group.enter()
        Thread {
            defer { group.leave() }
            for fault in schedule.faults {
                guard clock.pace(until: fault.start) else { break }
                do {
                    mark("inject \(fault.kind.rawValue) \(fault.node.map { "n\($0 + 1)" } ?? "redis")")
                    try cluster.inject(fault)
                    clock.pace(fault.duration, interruptible: false)
                    try cluster.heal(fault)
                    mark("healed \(fault.kind.rawValue) \(fault.node.map { "n\($0 + 1)" } ?? "redis")")
                } catch {
                    log.faultFailed(error)
                    mark("fault \(fault) failed: \(error)")
                    break
                }
            }
            clock.pace(until: schedule.length)
            clock.stop()
        }.start()
        group.wait()

        // Heal, then let every client settle: a live session with every intent confirmed.
        mark("churn over; healing")
        try cluster.healEverything()
        var violations: [ChaosViolation] = []
        if !cluster.cluster.waitUntilFormed(timeout: 20) {
            violations.append(ChaosViolation(invariant: "availability", subject: "cluster",
                                             detail: "the nodes did not see each other again within 20 s of the heal", users: []))
        }
        for client in clients {
            let settled = eventually(timeout: 20) {
                client.step(interruptible: false)
                return client.isSettled
            }
            if !settled {
                violations.append(ChaosViolation(invariant: "availability", subject: client.userId,
                                                 detail: "could not get a session with every intent confirmed within 20 s of the heal",
                                                 users: [client.userId]))
            }
        }
        mark("settled")

        // Quiet: wait (with a deadline) until everything agrees, then check once more.
        let checks = ChaosChecks(cluster: cluster, clients: clients, channels: channels)
        var final: [ChaosViolation] = []
        var listings: [[String: ChaosChecks.Listing]] = []
        func evaluate() -> [ChaosViolation] {
            var found: [ChaosViolation] = []
            for client in clients where !client.barrier() {
                found.append(ChaosViolation(invariant: "availability", subject: "\(client.userId) on n\(client.node + 1)",
                                            detail: "its connection did not answer a ping after the heal", users: [client.userId]))
            }
            listings = checks.listings(&found)
            found += checks.checkListings(listings)
            found += checks.checkRosters(listings)
            found += checks.checkStatuses()
            return found
        }
        _ = eventually(timeout: options.quietSeconds) {
            final = evaluate()
            return final.isEmpty
        }
        mark("checked")
        var webhookViolations: [ChaosViolation] = []
        if options.checkWebhooks {
            _ = eventually(timeout: 5) {
                webhookViolations = checks.checkWebhooks(listings)
                return webhookViolations.isEmpty
            }
        }
        violations += final
        var stats = ChaosClient.Stats()
        for client in clients {
            violations += client.violations
            stats.add(client.stats)
        }
        if let faultError = log.faultError {
            violations.append(ChaosViolation(invariant: "harness", subject: "faults", detail: "\(faultError)", users: []))
        }
        let checkCount = channels.count * 3 * 2 + clients.count * channels.count + clients.count * 3
            + (options.checkWebhooks ? channels.count : 0) + (options.checkMessages ? clients.count : 0)
        let report = Self.report(seed: seed, intervalMode: intervalMode, schedule: schedule, options: options,
                                 violations: violations, webhookViolations: webhookViolations, clients: clients,
                                 timeline: log.timeline, cluster: cluster)
        return ChaosResult(seed: seed, intervalMode: intervalMode, schedule: schedule, violations: violations,
                           webhookViolations: webhookViolations, stats: stats, checks: checkCount,
                           seconds: Date().timeIntervalSince(began), report: report)
    }

    private static func report(seed: UInt64, intervalMode: Bool, schedule: ChaosSchedule, options: ChaosOptions,
                               violations: [ChaosViolation], webhookViolations: [ChaosViolation], clients: [ChaosClient],
                               timeline: [String], cluster: ChaosCluster) -> String {
        guard !violations.isEmpty || !webhookViolations.isEmpty else { return "" }
        var lines: [String] = []
        let kinds = options.kinds.map(\.rawValue).joined(separator: ",")
        lines.append("=== chaos seed \(seed): \(violations.count) violation(s), \(webhookViolations.count) webhook finding(s); "
            + "\(intervalMode ? "interval-capable (maxInstantEvents 5)" : "announce") ===")
        let replay = options.replay?.replacingOccurrences(of: "{seed}", with: String(seed))
            ?? "CHAOS_SEED=\(seed)\(options.redis == .server ? "" : " CHAOS_REDIS=\(options.redis.rawValue)")"
            + "\(options.kinds == FaultKind.kinds(for: options.redis) ? "" : " CHAOS_FAULTS=\(kinds.isEmpty ? "none" : kinds)") make chaos"
        lines.append("replay: \(replay)")
        lines.append(schedule.description)
        lines.append("timeline:")
        lines += timeline.map { "  \($0)" }
        if !violations.isEmpty {
            lines.append("violations:")
            lines += violations.map { "  \($0)" }
        }
        if !webhookViolations.isEmpty {
            lines.append("webhook findings (the roster rebuilt from the webhooks; CHAOS_WEBHOOKS=0 turns the check off):")
            lines += webhookViolations.map { "  \($0)" }
        }
        if let result = try? ServerAPIRequest.ok(port: cluster.nodePort(0), "getChannels", [:]) {
            lines.append("channels (getChannels on n1): " + (result["channels"]?.arrayValue ?? []).map {
                "#\($0["channel"]?.stringValue ?? "?") \($0["mode"]?.stringValue ?? "?") occupancy \($0["occupancy"]?.numberValue?.intValue ?? -1) seq \($0["seq"]?.numberValue?.intValue ?? -1)"
            }.joined(separator: ", "))
        }
        // The events a watcher did not get, as the webhook receiver got them (when it did).
        var webhookEvents: [String: [Int: String]] = [:]
        for request in cluster.receiver.requests {
            for event in request.events where event["event"]?.stringValue == "presence" {
                guard let channel = event["channel"]?.stringValue, let seq = event["seq"]?.numberValue?.intValue else { continue }
                webhookEvents[channel, default: [:]][seq] = event.compactString
            }
        }
        var gapLines: [String] = []
        for violation in violations {
            guard let missed = violation.missed else { continue }
            for seq in missed.seqs.prefix(5) {
                gapLines.append("  \(violation.subject) missed seq \(seq): \(webhookEvents[missed.channel]?[seq] ?? "(no webhook either)")")
            }
        }
        if !gapLines.isEmpty {
            lines.append("the events behind each gap, from the webhooks:")
            lines += gapLines
        }
        let involved = Set((violations + webhookViolations).flatMap(\.users))
        for client in clients where involved.contains(client.userId) {
            // What the user did around each violation that names it (3 s before to 0.5 s
            // after), every change of its connection or session, and its last 25 steps.
            let moments = (violations + webhookViolations).filter { $0.users.contains(client.userId) }.compactMap(\.at)
            let last = client.history.suffix(25).first?.at ?? 0
            let lifecycle = ["drop:", "resumed ", "logged in ", "connection to ", "note:", "VIOLATION"]
            let shown = client.history.filter { entry in
                entry.at >= last || moments.contains { entry.at >= $0 - 3 && entry.at <= $0 + 0.5 }
                    || lifecycle.contains { entry.text.contains($0) }
            }
            lines.append("history of \(client.userId) (\(client.role.rawValue); around its violations during the churn, its connections and sessions, and its last 25 steps):")
            lines += shown.map { "  \($0.text)" }
            lines.append("in Redis for \(client.userId) (white-box):")
            lines += ChaosEvidence.dump(redisPort: cluster.keysRedisPort, keyPrefix: cluster.cluster.keyPrefix,
                                        groups: KeyGroups(count: cluster.redisCluster == nil ? 1 : KeyGroups.clusterCount),
                                        user: client.userId, channels: channels).split(separator: "\n").map { "  \($0)" }
        }
        // Each node's gauges and the tail of its log (the running process's: a killed node's
        // earlier life is gone), for what the clients cannot see: links, failovers, fencing.
        lines.append("nodes (gauges and the tail of each log):")
        lines += cluster.describe(logBytes: 8000).split(separator: "\n").map { "  \($0)" }
        // CHAOS_LOG_DIR: every node's whole log, for what the tails leave out.
        if let folder = ProcessInfo.processInfo.environment["CHAOS_LOG_DIR"], !folder.isEmpty {
            for (index, text) in cluster.cluster.nodeLogs().enumerated() {
                let path = "\(folder)/chaos-\(seed)-n\(index + 1).log"
                try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                if FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) { lines.append("  n\(index + 1)'s whole log: \(path)") }
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// What the fault thread and the clients write during a run, read once they are done: the
/// timeline of marks and the first fault that could not be injected or healed.
private final class ChaosRunLog: @unchecked Sendable {
    private let lock = NSLock()
    private var marks: [String] = []
    private var firstFaultError: Error?

    func mark(_ line: String) { lock.withLock { marks.append(line) } }
    func faultFailed(_ error: Error) { lock.withLock { if firstFaultError == nil { firstFaultError = error } } }
    var timeline: [String] { lock.withLock { marks } }
    var faultError: Error? { lock.withLock { firstFaultError } }
}
