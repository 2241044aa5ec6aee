import Foundation
import RollcallClient
import RollcallProtocol

/// Watches every node of a group through a fault and marks on a ``Timeline``, per node:
/// `/readyz` 503, the first request answered `UNAVAILABLE` (a probe session per node sends
/// `setState` every 50 ms in a channel of its own), `/readyz` 200 again, the first request
/// that succeeds again, and (when asked) `rollcall_redis_master_changes_total` going up.
final class NodeWatch: @unchecked Sendable {
    /// Node labels in the tables: A, B, C…
    static func label(_ index: Int) -> String { String(UnicodeScalar(UInt8(65 + index))) }

    private let group: NodeGroup
    private let timeline: Timeline
    private let probes: SpreadSessions
    private let lock = NSLock()
    private var sawUnavailable: [Bool]
    private var sawNotReady: [Bool]
    private var otherErrors: [String: Int] = [:]
    private var masterChanges: [Double?]
    private var running = false
    private var stopped = false
    private var thread: Thread?

    /// Opens one probe session per node, each alone in `probe:<node>`.
    init(group: NodeGroup, timeline: Timeline, trackMasterChanges: Bool) throws {
        self.group = group
        self.timeline = timeline
        let count = group.nodes.count
        sawUnavailable = Array(repeating: false, count: count)
        sawNotReady = Array(repeating: false, count: count)
        masterChanges = Array(repeating: nil, count: count)
        probes = try SpreadSessions(urls: group.urls, count: count, label: "probes", userId: { "probe-\($0)" })
        let joined = probes.requestAll("join", Array(0..<count), timeout: 10) { ["channel": .string("probe:\($0)"), "presence": false] }
        guard joined.failed == 0 else { probes.shutdown(); throw StormError("probes: \(joined.failed) joins failed") }
        if trackMasterChanges {
            masterChanges = (0..<count).map { Self.metric(group.urls[$0], "rollcall_redis_master_changes_total") }
        }
        for node in 0..<count {
            let label = Self.label(node)
            timeline.expect("node \(label): /readyz 503")
            timeline.expect("node \(label): first UNAVAILABLE")
        }
    }

    /// Starts the probe requests (every 50 ms on each node, not waiting for replies).
    func start() {
        lock.withLock { running = true }
        let thread = Thread { [self] in
            var round = 0
            while lock.withLock({ running }) {
                round += 1
                for node in 0..<probes.sessions.count { probe(node, round: round) }
                usleep(50_000)
            }
        }
        self.thread = thread
        thread.start()
    }

    /// Declares the rows of the recovery (so the table keeps this order).
    func expectRecovery() {
        for node in 0..<group.nodes.count {
            timeline.expect("node \(Self.label(node)): /readyz 200 again")
            timeline.expect("node \(Self.label(node)): requests succeed again")
        }
    }

    /// Reads every node's `/readyz` (and metric) once and marks what changed; call in the
    /// driver's loop.
    func poll() {
        for node in 0..<group.nodes.count {
            let label = Self.label(node)
            let status = LoopbackHTTP(url: group.urls[node])?.get("/readyz", timeoutSeconds: 1)?.status
            let notReadyBefore = lock.withLock { sawNotReady[node] }
            if status != 200 {
                timeline.mark("node \(label): /readyz 503")
                lock.withLock { sawNotReady[node] = true }
            } else if notReadyBefore {
                timeline.mark("node \(label): /readyz 200 again")
            }
            if let before = lock.withLock({ masterChanges[node] }),
               let now = Self.metric(group.urls[node], "rollcall_redis_master_changes_total"), now > before {
                timeline.mark("node \(label): master_changes_total +1 (on the new master)")
            }
        }
    }

    /// True once every node answered `/readyz` 200 after a 503.
    var everyNodeReadyAgain: Bool {
        (0..<group.nodes.count).allSatisfy { timeline.has("node \(Self.label($0)): /readyz 200 again") }
    }

    /// True when every node that answered `UNAVAILABLE` has since answered a probe with success.
    var requestsSettled: Bool {
        (0..<group.nodes.count).allSatisfy { node in
            !lock.withLock({ sawUnavailable[node] }) || timeline.has("node \(Self.label(node)): requests succeed again")
        }
    }

    /// Stops the probes and notes the errors other than UNAVAILABLE they got (there should be
    /// none); later calls do nothing.
    func stop() {
        let wasStopped = lock.withLock { () -> Bool in
            defer { stopped = true; running = false }
            return stopped
        }
        guard !wasStopped else { return }
        while thread?.isFinished == false { usleep(10_000) }
        let others = lock.withLock { otherErrors }
        timeline.note("probe errors other than UNAVAILABLE", others.isEmpty ? "none"
                      : others.keys.sorted().map { "\($0) ×\(others[$0]!)" }.joined(separator: ", "))
        probes.shutdown()
    }

    private func probe(_ node: Int, round: Int) {
        let label = Self.label(node)
        let sentAt = MonotonicSeconds.now
        probes.sessions[node].send("setState", ["channel": .string("probe:\(node)"), "state": ["round": .string("\(round)")]]) { [self] reply in
            if reply.ok {
                if lock.withLock({ sawUnavailable[node] }), sentAt > timeline.faultAt {
                    timeline.mark("node \(label): requests succeed again")
                }
            } else if reply.errorCode == .unavailable {
                timeline.mark("node \(label): first UNAVAILABLE")
                lock.withLock { sawUnavailable[node] = true }
            } else {
                lock.withLock { otherErrors[reply.errorCodeText ?? "?", default: 0] += 1 }
            }
        }
    }

    /// One counter or gauge of a node's `/metrics` (nil: no answer or no such line).
    static func metric(_ url: String, _ name: String) -> Double? {
        guard let page = LoopbackHTTP(url: url)?.get("/metrics", timeoutSeconds: 1), page.status == 200 else { return nil }
        for line in page.body.split(whereSeparator: \.isNewline) where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }
}
