import Foundation

/// The brokers one phase of the cluster scenario runs against: N `rollcall` nodes on one
/// Redis (cluster mode), or one standalone node (`cluster.redis` null). Every node gets the
/// same presence and limits sections (cluster mode refuses differing ones).
final class NodeGroup {
    /// Cluster settings of the launched nodes.
    static let heartbeatSeconds = 0.2
    static let nodeTimeoutSeconds = 1.0
    static let keyPrefix = "bench:"
    /// `presence.timeoutSeconds`: short, so the kill -9 phase ends soon.
    static let presenceTimeoutSeconds = 2.0

    let label: String
    private(set) var nodes: [BrokerLauncher] = []

    /// Launches `count` nodes on `redis`, or one standalone node when `redis` is nil.
    convenience init(label: String, count: Int, binary: String, redis: RedisServerProcess?) throws {
        try self.init(label: label, count: count, binary: binary, redisURL: redis?.url)
    }

    /// Launches `count` nodes on `redisURL` (any `cluster.redis` form, e.g. `redis+sentinel://`),
    /// or one standalone node when it is nil; `apiKey` turns the server API on.
    init(label: String, count: Int, binary: String, redisURL: String?, apiKey: String? = nil) throws {
        self.label = label
        let config = Self.config(redisURL: redisURL, apiKey: apiKey)
        do {
            for _ in 0..<(redisURL == nil ? 1 : count) {
                nodes.append(try BrokerLauncher(binary: binary, config: config))
            }
        } catch {
            stop()
            throw error
        }
        print("cluster: \(label): \(nodes.map { "\($0.url) (pid \($0.pid))" }.joined(separator: ", "))")
    }

    /// The config the bench writes over BrokerLauncher's defaults: a `cluster` section when
    /// there is a Redis, presence and limits for every phase.
    static func config(redis: RedisServerProcess?) -> [String: Any] { config(redisURL: redis?.url, apiKey: nil) }

    /// ``config(redis:)`` for any `cluster.redis` URL, with `api.keys` when `apiKey` is given.
    static func config(redisURL: String?, apiKey: String?) -> [String: Any] {
        var config: [String: Any] = [
            "presence": ["maxInstantEvents": 100, "hysteresis": 10, "intervalSeconds": 1,
                         "timeoutSeconds": presenceTimeoutSeconds, "snapshotMaxMembers": 2000],
            "limits": ["requestsPerSecond": 100_000, "requestBurst": 100_000, "maxChannelsPerSession": 256],
            "storage": ["path": NSNull()],
        ]
        if let apiKey { config["api"] = ["keys": [apiKey]] }
        if let redisURL {
            config["cluster"] = ["redis": redisURL, "keyPrefix": keyPrefix,
                                 "heartbeatSeconds": heartbeatSeconds, "nodeTimeoutSeconds": nodeTimeoutSeconds]
        }
        return config
    }

    /// The config as one line of JSON for the report.
    static func configText(redis: RedisServerProcess?) -> String { configText(redisURL: redis?.url) }

    /// ``configText(redis:)`` for any `cluster.redis` URL.
    static func configText(redisURL: String?) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: config(redisURL: redisURL, apiKey: nil), options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\\/", with: "/")
    }

    var urls: [String] { nodes.map(\.url) }
    var pids: [Int32] { nodes.map(\.pid) }

    /// CPU seconds (user + system, from schedstat) of every node still running, added up.
    var cpuSeconds: Double { nodes.reduce(0) { $0 + (ThreadCPU.seconds(pid: $1.pid) ?? 0) } }

    /// User and system CPU of every node still running, added up (/proc/PID/stat, clock ticks).
    var cpuTimes: CPUTimes {
        nodes.reduce(CPUTimes()) { sum, node in
            let times = CPUTimes.read(pid: node.pid) ?? CPUTimes()
            return CPUTimes(user: sum.user + times.user, system: sum.system + times.system)
        }
    }

    /// `GET /healthz` status of each node (nil: no answer).
    func healthStatuses() -> [Int?] {
        nodes.map { node in LoopbackHTTP(url: node.url)?.get("/healthz", timeoutSeconds: 1)?.status }
    }

    /// Waits (up to `timeout`) until every node answers `/healthz` 200; false when it did not.
    func waitHealthy(timeout: Double) -> Bool {
        let deadline = MonotonicSeconds.now + timeout
        while MonotonicSeconds.now < deadline {
            if healthStatuses().allSatisfy({ $0 == 200 }) { return true }
            usleep(50_000)
        }
        return false
    }

    /// SIGKILL node `index` (this process's child only).
    func killNode(_ index: Int) { kill(nodes[index].pid, SIGKILL) }

    /// Stops every node (SIGTERM, then SIGKILL after 5 s).
    func stop() {
        for node in nodes { node.stop() }
    }
}
