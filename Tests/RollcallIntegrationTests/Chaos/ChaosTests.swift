import Foundation
import Testing

/// The fault-injection suite (issue 29; docs/testing.md, "Chaos suite"), in the spirit of
/// Jepsen: seeded schedules of faults over three nodes and a real redis-server with the
/// append-only file — `kill -9` and restart of a node, SIGSTOP of a node past
/// `nodeTimeoutSeconds`, a node's Redis link cut or frozen at a proxy, Redis shut down and
/// started again, Redis stopped — while clients churn on every node; then, healed and quiet,
/// the invariants of ``ChaosChecks``. A violation prints the seed, the schedule, the difference
/// and the histories of the users involved; `CHAOS_SEED=<seed> make chaos` replays it.
///
/// `swift test` runs one short schedule (``shortSchedule()``). `make chaos` runs
/// ``chaosForSeconds()``: schedules with fresh seeds for `CHAOS_SECONDS`.
@Suite("Chaos", .serialized)
struct ChaosTests {
    /// The faults of the short schedule in `swift test`: every kind. Its seed picks which
    /// ones it injects, and when (docs/testing.md, "Chaos suite").
    static let shortKinds: [FaultKind] = FaultKind.kinds(for: .server)
    static let shortSeed: UInt64 = 2026

    @Test("a short seeded schedule: faults while clients churn on three nodes; once healed and quiet every invariant holds")
    func shortSchedule() throws {
        let environment = try ChaosEnvironment(ProcessInfo.processInfo.environment)
        // 3 s of `nodeTimeoutSeconds` (not 1): a node starved of CPU by the suites running
        // beside it is not declared dead without a fault.
        let options = ChaosOptions(kinds: Self.shortKinds, churnSeconds: 6, churners: 4, checkWebhooks: true, checkMessages: true,
                                   quietSeconds: 15, nodeTimeoutSeconds: 3,
                                   replay: "CHAOS_SHORT_SEED={seed} swift test --filter ChaosTests/shortSchedule")
        let seed = environment.shortSeed ?? Self.shortSeed
        let result = try ChaosRun.run(seed: seed, options: options)
        print("chaos: short schedule, seed \(seed): \(result.violations.count) violation(s) in \(String(format: "%.1f", result.seconds)) s\n\(result.schedule)")
        #expect(result.passed && result.webhookViolations.isEmpty, "\(result.report)")
    }

    @Test("a short seeded schedule on a Redis Cluster: the master serving the keys is killed while clients churn (its replica takes over); once healed and quiet every invariant holds")
    func shortScheduleOnRedisCluster() throws {
        let environment = try ChaosEnvironment(ProcessInfo.processInfo.environment)
        let options = ChaosOptions(redis: .cluster, kinds: [.failoverRedis], churnSeconds: 6, churners: 4, checkWebhooks: true,
                                   checkMessages: true, quietSeconds: 15, nodeTimeoutSeconds: 3,
                                   replay: "CHAOS_SHORT_SEED={seed} swift test --filter ChaosTests/shortScheduleOnRedisCluster")
        let seed = environment.shortSeed ?? Self.shortSeed
        let result = try ChaosRun.run(seed: seed, options: options)
        print("chaos: short schedule on a Redis Cluster, seed \(seed): \(result.violations.count) violation(s) in \(String(format: "%.1f", result.seconds)) s\n\(result.schedule)")
        #expect(result.schedule.faults.contains { $0.kind == .failoverRedis }, "\(result.schedule)")
        #expect(result.passed && result.webhookViolations.isEmpty, "\(result.report)")
    }

    @Test("fault schedules with fresh seeds for CHAOS_SECONDS (make chaos); CHAOS_SEED replays one",
          .enabled(if: ChaosEnvironment.isLongRun(ProcessInfo.processInfo.environment)))
    func chaosForSeconds() throws {
        let environment = try ChaosEnvironment(ProcessInfo.processInfo.environment)
        var options = ChaosOptions()
        options.redis = environment.redis
        options.kinds = environment.kinds
        options.checkWebhooks = environment.checkWebhooks
        let summary = ChaosSummary(reportPath: environment.reportPath)
        let started = Date()
        var seeds = environment.seed.map { [$0] } ?? []
        while true {
            let seed: UInt64
            if environment.seed != nil {
                guard let next = seeds.popLast() else { break }
                seed = next
            } else {
                guard Date().timeIntervalSince(started) < environment.seconds else { break }
                seed = UInt64.random(in: 1...UInt64(1) << 48)
            }
            print("chaos: seed \(seed) starts (\(String(format: "%.0f", Date().timeIntervalSince(started))) s in)")
            let result: ChaosResult
            do {
                result = try ChaosRun.run(seed: seed, options: options)
            } catch {
                summary.harnessFailure(seed: seed, error: error)
                continue
            }
            summary.add(result)
        }
        summary.finish(seconds: Date().timeIntervalSince(started))
        #expect(summary.failedSeeds.isEmpty, "violations with seeds \(summary.failedSeeds); the reports are above\(environment.reportPath.map { " and in \($0)" } ?? "")")
    }
}
