import Foundation

/// The running tally of `make chaos`: each seed as it ends, every report, and the figures at
/// the end (faults injected, operations, checks, violations by invariant and by seed).
final class ChaosSummary {
    private let reportPath: String?
    private(set) var failedSeeds: [UInt64] = []
    private var runs = 0
    private var webhookFailedSeeds: [UInt64] = []
    private var stats = ChaosClient.Stats()
    private var faults: [FaultKind: Int] = [:]
    private var checks = 0
    private var byInvariant: [String: Int] = [:]
    private var webhookByInvariant: [String: Int] = [:]
    private var byFaultSet: [String: (runs: Int, failed: Int)] = [:]

    init(reportPath: String?) { self.reportPath = reportPath }

    func add(_ result: ChaosResult) {
        runs += 1
        stats.add(result.stats)
        checks += result.checks
        for fault in result.schedule.faults { faults[fault.kind, default: 0] += 1 }
        for violation in result.violations { byInvariant[violation.invariant, default: 0] += 1 }
        for violation in result.webhookViolations { webhookByInvariant[violation.invariant, default: 0] += 1 }
        if !result.passed { failedSeeds.append(result.seed) }
        if !result.webhookViolations.isEmpty { webhookFailedSeeds.append(result.seed) }
        for kind in Set(result.schedule.faults.map(\.kind)) {
            var entry = byFaultSet[kind.rawValue] ?? (0, 0)
            entry.runs += 1
            if !result.passed { entry.failed += 1 }
            byFaultSet[kind.rawValue] = entry
        }
        let kinds = Set(result.schedule.faults.map(\.kind.rawValue)).sorted().joined(separator: ",")
        let line = "chaos: seed \(result.seed) \(result.passed ? "passed" : "FAILED") in \(String(format: "%.1f", result.seconds)) s "
            + "(\(result.schedule.faults.count) faults: \(kinds); \(result.intervalMode ? "interval-capable" : "announce"); "
            + "\(result.violations.count) violation(s) [\(Set(result.violations.map(\.invariant)).sorted().joined(separator: ","))], "
            + "\(result.webhookViolations.count) webhook finding(s))"
        emit(line)
        if !result.report.isEmpty { emit(result.report) }
    }

    func harnessFailure(seed: UInt64, error: Error) {
        failedSeeds.append(seed)
        emit("chaos: seed \(seed) could not run: \(error)")
    }

    func finish(seconds: Double) {
        var lines = ["chaos summary: \(runs) schedules in \(String(format: "%.0f", seconds)) s; \(failedSeeds.count) with violations, "
            + "\(webhookFailedSeeds.count) with webhook findings"]
        lines.append("  faults injected: " + faults.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", "))
        lines.append("  operations: " + stats.ops.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        lines.append("  answers: UNAVAILABLE \(stats.unavailable), no answer \(stats.noAnswer); sessions resumed \(stats.resumed), "
            + "fresh logins \(stats.freshLogins), drops \(stats.drops), given up \(stats.givenUp); leaves UNAVAILABLE then NOT_IN_CHANNEL \(stats.halfDoneLeaves)")
        lines.append("  checks evaluated (final pass): \(checks)")
        lines.append("  violations by invariant: " + (byInvariant.isEmpty ? "none" : byInvariant.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
        lines.append("  webhook findings: " + (webhookByInvariant.isEmpty ? "none" : webhookByInvariant.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
        lines.append("  schedules containing each fault (failed/runs): " + byFaultSet.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.failed)/\($0.value.runs)" }.joined(separator: ", "))
        lines.append("  seeds with violations: \(failedSeeds.map(String.init).joined(separator: " "))")
        lines.append("  seeds with webhook findings: \(webhookFailedSeeds.map(String.init).joined(separator: " "))")
        emit(lines.joined(separator: "\n"))
    }

    private func emit(_ text: String) {
        print(text)
        guard let reportPath else { return }
        let data = Data((text + "\n").utf8)
        if let handle = FileHandle(forWritingAtPath: reportPath) {
            handle.seekToEndOfFile()
            handle.write(data)
            handle.closeFile()
        } else {
            FileManager.default.createFile(atPath: reportPath, contents: data)
        }
    }
}
