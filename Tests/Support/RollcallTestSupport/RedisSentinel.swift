import Foundation

/// A throwaway Redis Sentinel for tests (`redis-server sentinel.conf --sentinel`: the binary
/// Debian's `redis-sentinel` links to, so `redis-server` alone is enough) on a free loopback
/// port, watching one master with small timeouts, in its own temporary directory (Sentinel
/// rewrites its config file), killed at the end.
public final class RedisSentinel: @unchecked Sendable {
    /// The loopback port it listens on.
    public let port: Int
    /// The master's name (`sentinel monitor <name> …`).
    public let masterName: String
    private let directory: URL
    private var process: ChildProcess?

    /// Starts a sentinel monitoring the master on 127.0.0.1:`masterPort` under `masterName` with
    /// `quorum`, declaring it down after `downAfterMilliseconds`, and waits until it answers.
    /// With `password` the sentinel itself requires it (`requirepass`).
    public init(masterName: String, masterPort: Int, masterPassword: String? = nil, password: String? = nil, quorum: Int = 2,
                downAfterMilliseconds: Int = 1000, failoverTimeoutMilliseconds: Int = 3000, startTimeout: TimeInterval = 10) throws {
        guard let binary = RedisServer.binary else {
            throw TestSupportError("redis-server not found (`make deps` installs it, or set REDIS_SERVER)")
        }
        self.masterName = masterName
        port = try RedisServer.freeLoopbackPort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-sentinel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lines = [
            "port \(port)", "bind 127.0.0.1", "daemonize no", "dir \(directory.path)", "logfile sentinel.log",
            "sentinel monitor \(masterName) 127.0.0.1 \(masterPort) \(quorum)",
            "sentinel down-after-milliseconds \(masterName) \(downAfterMilliseconds)",
            "sentinel failover-timeout \(masterName) \(failoverTimeoutMilliseconds)",
            "sentinel parallel-syncs \(masterName) 1",
        ]
        if let masterPassword { lines.append("sentinel auth-pass \(masterName) \(masterPassword)") }
        if let password { lines.append("requirepass \(password)") }
        let config = directory.appendingPathComponent("sentinel.conf")
        try (lines.joined(separator: "\n") + "\n").write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(executable: binary, arguments: [config.path, "--sentinel"], directory: directory.path)
        self.process = process
        let deadline = Date().addingTimeInterval(startTimeout)
        while !RedisServer.answersPing(port: port) {
            guard process.status == nil, Date() < deadline else {
                kill()
                throw TestSupportError("redis-sentinel on port \(port) did not start; log:\n\(log)")
            }
            usleep(10_000)
        }
    }

    /// Everything the sentinel logged (for failure messages).
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("sentinel.log"), encoding: .utf8)) ?? ""
    }

    /// SIGKILL, waiting for the exit.
    public func kill() {
        guard let process, process.status == nil else { return }
        _ = Foundation.kill(process.pid, SIGKILL)
        _ = process.waitForExit(timeout: 30)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
