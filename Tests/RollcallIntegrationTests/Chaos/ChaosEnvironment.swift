import Foundation

/// The chaos suite's settings from the environment, each validated (a bad value fails the run
/// with a message naming the variable):
/// - `CHAOS_SECONDS`: how long `make chaos` runs schedules (a positive number; default 300).
/// - `CHAOS_SEED`: run this one seed (an unsigned integer) instead of fresh ones.
/// - `CHAOS_SHORT_SEED`: the seed of the short schedule in `swift test`.
/// - `CHAOS_FAULTS`: the kinds of fault to draw from, comma-separated (default: all of them:
///   `kill-node,pause-node,cut-link,freeze-link,restart-redis,pause-redis`); `none`: churn
///   without faults.
/// - `CHAOS_WEBHOOKS`: `0` turns the webhook check off, `1` (default) on.
/// - `CHAOS_REDIS`: `server` (default: one redis-server) or `cluster` (a Redis Cluster of 3
///   masters with a replica each; the default faults are then those it can take,
///   `FaultKind.kinds(for:)`).
/// - `CHAOS_REPORT`: a file the reports and the summary are appended to.
/// - `CHAOS_LOG_DIR`: a folder a failing run writes each node's whole log to (read by the
///   report itself, `ChaosRun`).
struct ChaosEnvironment {
    let seconds: Double
    let seed: UInt64?
    let shortSeed: UInt64?
    let kinds: [FaultKind]
    let checkWebhooks: Bool
    let reportPath: String?
    let redis: ChaosRedis

    /// True when `make chaos` asked for the long run (`CHAOS_SECONDS` or `CHAOS_SEED` set).
    static func isLongRun(_ environment: [String: String]) -> Bool {
        !(environment["CHAOS_SECONDS"] ?? "").isEmpty || !(environment["CHAOS_SEED"] ?? "").isEmpty
    }

    init(_ environment: [String: String]) throws {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if let text = value("CHAOS_SECONDS") {
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                throw HarnessError("CHAOS_SECONDS must be a positive number of seconds, not \(text)")
            }
            self.seconds = seconds
        } else {
            seconds = 300
        }
        func unsigned(_ name: String) throws -> UInt64? {
            guard let text = value(name) else { return nil }
            guard let seed = UInt64(text) else { throw HarnessError("\(name) must be an unsigned integer, not \(text)") }
            return seed
        }
        switch value("CHAOS_REDIS") {
        case nil: redis = .server
        case let text?:
            guard let kind = ChaosRedis(rawValue: text) else { throw HarnessError("CHAOS_REDIS must be server or cluster, not \(text)") }
            redis = kind
        }
        seed = try unsigned("CHAOS_SEED")
        shortSeed = try unsigned("CHAOS_SHORT_SEED")
        if let text = value("CHAOS_FAULTS") {
            if text == "none" {
                kinds = []
            } else {
                let possible = FaultKind.kinds(for: redis)
                guard let kinds = FaultKind.list(text), kinds.allSatisfy(possible.contains) else {
                    throw HarnessError("CHAOS_FAULTS must list some of \(possible.map(\.rawValue).joined(separator: ",")) (CHAOS_REDIS=\(redis.rawValue)), or be none, not \(text)")
                }
                self.kinds = kinds
            }
        } else {
            kinds = FaultKind.kinds(for: redis)
        }
        switch value("CHAOS_WEBHOOKS") {
        case nil, "1": checkWebhooks = true
        case "0": checkWebhooks = false
        case let other?: throw HarnessError("CHAOS_WEBHOOKS must be 0 or 1, not \(other)")
        }
        reportPath = value("CHAOS_REPORT")
    }
}
