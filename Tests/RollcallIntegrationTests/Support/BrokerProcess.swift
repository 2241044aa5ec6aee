import Foundation
@_spi(Testing) import RollcallClient
import RollcallProtocol
import RollcallTestSupport

/// Errors of the integration harness.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A real `rollcall` broker process on an ephemeral port, with its own temporary config.
///
/// The binary is `.build/debug/rollcall` under the package root (found from this file's
/// path), or `$ROLLCALL_BINARY`.
final class BrokerProcess: @unchecked Sendable {
    /// How the process ended after ``stop(timeout:)``.
    struct Exit {
        /// Exit status, or the signal number when `signaled`.
        let status: Int32
        /// True when a signal ended the process.
        let signaled: Bool
        /// Seconds from sending SIGTERM to the process's exit.
        let seconds: Double
    }

    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["ROLLCALL_BINARY"], !path.isEmpty { return path }
        return packageRoot.appendingPathComponent(".build/debug/rollcall").path
    }

    /// The settings every test broker starts from: in-memory storage, quiet logs.
    static let baseConfig: [String: Any] = [
        "listen": ["host": "127.0.0.1", "port": 0],
        "storage": ["path": NSNull()],
        "log": ["level": "warning"],
    ]

    private(set) var process: ChildProcess!
    let port: Int
    let configURL: URL
    private var output: OutputCollector { process.output }

    /// Starts a broker with `baseConfig` deep-merged with `config` and waits for
    /// `listening on HOST:PORT`. A non-empty `wrapper` is a command the broker's command line
    /// is appended to, e.g. `["/bin/sh", "-c", "ulimit -n 128 && exec \"$@\"", "sh"]`.
    /// `blockedSignals` start blocked in the broker's signal mask. `port` 0 (the default) lets
    /// the broker pick a free one; a cluster node restarted in place passes its old port.
    init(config: [String: Any] = [:], startTimeout: TimeInterval = 15, wrapper: [String] = [],
         blockedSignals: [Int32] = [], port requestedPort: Int = 0) throws {
        let merged = Self.merge(Self.baseConfig, config)
        configURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("rollcall-test-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: merged, options: [.sortedKeys]).write(to: configURL)
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw HarnessError("broker binary not found at \(Self.binary) (run `swift build` or set ROLLCALL_BINARY)")
        }
        let command = wrapper + [Self.binary, "--config", configURL.path, "--port", String(requestedPort)]
        let child = try ChildProcess(
            executable: command[0], arguments: Array(command.dropFirst()),
            directory: Self.packageRoot.path, blockedSignals: blockedSignals)
        process = child
        let announced: String?
        if ((merged["log"] as? [String: Any])?["format"] as? String) == "json" {
            // `log.format: "json"`: the announcement is a JSON line whose `msg` is the text.
            announced = child.output.waitForStdoutLine(prefix: "{", timeout: startTimeout).flatMap { Self.announcement(inJSONLine: "{" + $0) }
        } else {
            announced = child.output.waitForStdoutLine(prefix: "listening on ", timeout: startTimeout)
        }
        guard let line = announced,
              let portText = line.split(separator: ":").last, let port = Int(portText)
        else {
            child.send(SIGKILL)
            _ = child.waitForExit(timeout: 5)
            child.output.waitForEOF(timeout: 2)  // all of stderr, which names what was refused
            throw HarnessError("broker did not report its port; stderr:\n\(child.output.stderrText)")
        }
        self.port = port
    }

    /// `HOST:PORT` from a JSON log line whose `msg` is `listening on HOST:PORT` (nil for another line).
    static func announcement(inJSONLine line: String) -> String? {
        guard let message = (try? JSONParser.parse(Array(line.utf8)))?["msg"]?.stringValue,
              message.hasPrefix("listening on ") else { return nil }
        return String(message.dropFirst("listening on ".count))
    }

    /// `ws://127.0.0.1:PORT/v1` (or another path).
    func url(path: String = "/v1") -> String { "ws://127.0.0.1:\(port)\(path)" }

    /// Everything the broker wrote to stderr so far.
    var stderrText: String { output.stderrText }

    /// Everything the broker wrote to stdout so far.
    var stdoutText: String { output.stdoutText }

    /// True while the process runs.
    var isRunning: Bool { process.status == nil }

    /// Opens a WebSocket (no login).
    func connect(path: String = "/v1", subprotocol: String? = "rollcall.v1", origin: String? = nil,
                 recordTranscript: Bool = false) throws -> RollcallConnection {
        try RollcallConnection.connect(url: url(path: path), subprotocol: subprotocol, origin: origin,
                                       recordTranscript: recordTranscript, timeout: .seconds(5))
    }

    /// Opens a WebSocket and logs in as `userId`; throws unless the login succeeds.
    func session(_ userId: String, recordTranscript: Bool = false) throws -> RollcallConnection {
        let connection = try connect(recordTranscript: recordTranscript)
        let reply = try connection.login(userId: userId, platform: "cli")
        guard reply.ok else { throw HarnessError("login of \(userId) failed: \(reply)") }
        return connection
    }

    /// Sends SIGTERM and waits up to `timeout` for the exit.
    @discardableResult
    func stop(timeout: TimeInterval = 5) -> Exit? {
        let started = Date()
        if process.status == nil { process.send(SIGTERM) }
        guard let status = process.waitForExit(timeout: timeout) else { return nil }
        let signaled = (status & 0x7f) != 0
        return Exit(status: signaled ? status & 0x7f : (status >> 8) & 0xff, signaled: signaled,
                    seconds: Date().timeIntervalSince(started))
    }

    /// SIGKILL, without waiting for a graceful exit.
    func kill() {
        guard let process, process.status == nil else { return }
        process.send(SIGKILL)
        _ = process.waitForExit(timeout: 5)
    }

    /// The value of an unlabelled or labelled sample in `/metrics`, e.g.
    /// `metric("rollcall_errors_total{code=\"UNKNOWN_OP\"}")`.
    func metric(_ sample: String) throws -> Int? {
        let response = try RawHTTP.get(port: port, path: "/metrics")
        for line in response.bodyText.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1)).map { Int($0) }  // gauges print as `2.0`
        }
        return nil
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: configURL)
    }

    /// Deep merge: dictionaries merge key by key, anything else in `override` replaces.
    static func merge(_ base: [String: Any], _ override: [String: Any]) -> [String: Any] {
        var result = base
        for (key, value) in override {
            if let inner = value as? [String: Any], let existing = result[key] as? [String: Any] {
                result[key] = merge(existing, inner)
            } else {
                result[key] = value
            }
        }
        return result
    }
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes; returns whether it held.
func eventually(timeout: TimeInterval = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.02)
    }
}
