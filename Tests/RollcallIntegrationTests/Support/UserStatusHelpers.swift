import Foundation
import RollcallClient
import RollcallProtocol
import RollcallTestSupport
import Testing

/// Helpers for the user-status integration tests (PROTOCOL §6).

/// Reading a status record `{userId, status, customStatus, platforms, last…Time}`.
extension JSON {
    /// `userId` of a record.
    var userIdText: String? { self["userId"]?.stringValue }
    /// `status` of a record: `online`, `offline` or `loggedOut`.
    var statusText: String? { self["status"]?.stringValue }
    /// `customStatus` of a record (nil when `null`).
    var customStatusText: String? { self["customStatus"]?.stringValue }
    /// `platforms` of a record.
    var platformList: [String] { (self["platforms"]?.arrayValue ?? []).compactMap { $0.stringValue } }
    /// An integer member (times, `expiresAt`).
    func integer(_ key: String) -> Int? { self[key]?.numberValue?.intValue }
}

extension Reply {
    /// The `statuses` list of a `getUserStatus` / `subscribeUserStatus` result.
    var statuses: [JSON] { self["statuses"]?.arrayValue ?? [] }
    /// The record of `userId` in `statuses`.
    func status(of userId: String) -> JSON? { statuses.first { $0.userIdText == userId } }
    /// `failed` as `[userId: code]`.
    var failures: [String: String] {
        var map: [String: String] = [:]
        for entry in self["failed"]?.arrayValue ?? [] {
            if let id = entry.userIdText { map[id] = entry["code"]?.stringValue ?? "?" }
        }
        return map
    }
}

extension RollcallConnection {
    /// Waits for a `userStatus` event carrying a record of `userId` that satisfies `predicate`
    /// and returns that record. Earlier non-matching events stay queued.
    func waitForStatus(of userId: String, timeout: Duration = .seconds(10),
                       where predicate: @escaping (JSON) -> Bool = { _ in true }) throws -> JSON {
        let event = try waitForEvent(timeout: timeout) { event in
            event.name == "userStatus"
                && (event["statuses"]?.arrayValue ?? []).contains { $0.userIdText == userId && predicate($0) }
        }
        return try #require((event["statuses"]?.arrayValue ?? []).last { $0.userIdText == userId && predicate($0) })
    }

    /// Waits for a `subscriptions` event and returns its `(added, removed)` lists.
    func waitForSubscriptionsEvent(timeout: Duration = .seconds(10)) throws -> (added: [String], removed: [String]) {
        let event = try waitForEvent(timeout: timeout) { $0.name == "subscriptions" }
        func list(_ key: String) -> [String] { (event[key]?.arrayValue ?? []).compactMap { $0.stringValue } }
        return (list("added"), list("removed"))
    }

    /// Sends a `ping` and waits for its reply, so that every event caused by earlier
    /// requests has arrived (replies come before the events of later requests), then
    /// returns the queued events of `name`.
    func settledEvents(named name: String) throws -> [Event] {
        _ = try call("ping")
        return drainEvents().filter { $0.name == name }
    }

    /// `getUserStatus` of one user; returns its record.
    func userStatus(of userId: String) throws -> JSON {
        let reply = try request("getUserStatus", ["userIds": [.string(userId)]])
        #expect(reply.ok, "\(reply)")
        return try #require(reply.status(of: userId), "\(reply)")
    }

    /// `subscribeUserStatus` with the given ids (and duration); returns the reply.
    func subscribe(_ userIds: [String], duration: Int? = nil) throws -> Reply {
        var args = JSONObject()
        args["userIds"] = .array(userIds.map { .string($0) })
        if let duration { args["duration"] = .int(duration) }
        return try request("subscribeUserStatus", .object(args))
    }

    /// `setCustomStatus`; nil sends `null`.
    func setCustomStatus(_ text: String?) throws -> Reply {
        try request("setCustomStatus", ["customStatus": text.map { .string($0) } ?? .null])
    }

    /// The broker's clock, from `ping`.
    func serverTime() throws -> Int {
        try #require(try call("ping")["serverTime"]?.numberValue?.intValue)
    }
}

extension BrokerUnderTest {
    /// Opens a WebSocket and logs in as `userId` on `platform`; throws unless the login
    /// succeeds. In a cluster each call lands on another node.
    func session(_ userId: String, platform: String, customStatus: String? = nil) throws -> RollcallConnection {
        let connection = try connect()
        let reply = try connection.login(userId: userId, platform: platform, customStatus: customStatus)
        guard reply.ok else { throw HarnessError("login of \(userId) failed: \(reply)") }
        return connection
    }
}

extension BrokerProcess {

    /// Runs the broker with `baseConfig` merged with `config` and expects it to exit on its
    /// own (a start-up refusal); returns the exit status and stderr, nil if it kept running
    /// (then it is killed).
    static func runExpectingExit(config: [String: Any], timeout: TimeInterval = 15) throws -> (status: Int32, stderr: String)? {
        let configURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("rollcall-test-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: merge(baseConfig, config), options: [.sortedKeys]).write(to: configURL)
        defer { try? FileManager.default.removeItem(at: configURL) }
        let child = try ChildProcess(executable: binary, arguments: ["--config", configURL.path, "--port", "0"],
                                     directory: packageRoot.path)
        let output = child.output
        guard let status = child.waitForExit(timeout: timeout) else {
            child.send(SIGKILL)
            _ = child.waitForExit(timeout: 5)
            return nil
        }
        output.waitForEOF(timeout: 5)
        return ((status >> 8) & 0xff, output.stderrText)
    }
}

/// A temporary directory for one test's database, removed on deinit.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-db-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The `sqlite3` command-line shell, when installed: reads a database the broker writes.
enum SQLiteShell {
    static let path = "/usr/bin/sqlite3"
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs one query read-only; returns stdout (trimmed), nil on failure.
    static func query(_ database: String, _ sql: String) -> String? {
        guard let child = try? ChildProcess(executable: path, arguments: ["-readonly", database, sql],
                                            directory: FileManager.default.temporaryDirectory.path)
        else { return nil }
        let output = child.output
        guard let status = child.waitForExit(timeout: 10) else {
            child.send(SIGKILL)
            _ = child.waitForExit(timeout: 5)
            return nil
        }
        output.waitForEOF(timeout: 5)
        guard status == 0 else { return nil }
        return output.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
