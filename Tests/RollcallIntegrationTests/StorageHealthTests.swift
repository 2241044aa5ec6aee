import Foundation
import RollcallClient
import RollcallProtocol
import Testing

/// Durable-write failures of the real broker show in `/readyz` and `/healthz` (503 with the
/// reason on one line; `/livez` stays 200) and in `/metrics`, and clear once the database is
/// writable again.
@Suite("Storage health")
struct StorageHealthTests {
    /// Another process holding an exclusive lock on the broker's SQLite file (Python's
    /// standard sqlite3 module), until `release()`.
    final class DatabaseLock {
        let process = Process()
        let input = Pipe()
        let output = Pipe()

        init(path: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
                c.execute("BEGIN EXCLUSIVE")
                print("locked", flush=True)
                sys.stdin.read()
                c.execute("COMMIT")
                """, path]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let line = output.fileHandleForReading.availableData
            guard String(decoding: line, as: UTF8.self).hasPrefix("locked") else {
                throw HarnessError("could not lock \(path)")
            }
        }

        func release() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test("while commits fail /healthz answers 503 with the reason; it recovers by itself")
    func failingWrites() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-health-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("status.db").path
        let broker = try BrokerProcess(config: ["storage": ["path": path]])
        #expect(try RawHTTP.get(port: broker.port, path: "/healthz").status == 200)
        #expect(try broker.metric("rollcall_storage_healthy") == 1)

        let lock = try DatabaseLock(path: path)
        let alice = try broker.session("alice")            // a status change to commit
        #expect(try alice.request("setCustomStatus", ["customStatus": "busy"]).ok)
        #expect(try eventually(timeout: 30) { try RawHTTP.get(port: broker.port, path: "/healthz").status == 503 })
        let unhealthy = try RawHTTP.get(port: broker.port, path: "/healthz").bodyText
        #expect(unhealthy.contains("storage: durable writes failing"))
        let notReady = try RawHTTP.get(port: broker.port, path: "/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.bodyText.hasPrefix("storage: durable writes failing"))
        #expect(notReady.bodyText.filter { $0 == "\n" }.count == 1, "one line: \(notReady.bodyText)")
        #expect(try RawHTTP.get(port: broker.port, path: "/livez").status == 200, "storage never fails liveness")
        #expect(try broker.metric("rollcall_storage_healthy") == 0)
        #expect(try (broker.metric("rollcall_storage_write_failures_total") ?? 0) >= 1)
        // The broker keeps serving meanwhile.
        #expect(try alice.request("ping").ok)

        lock.release()
        #expect(try eventually(timeout: 30) { try RawHTTP.get(port: broker.port, path: "/healthz").status == 200 })
        #expect(try RawHTTP.get(port: broker.port, path: "/readyz").status == 200)
        #expect(try broker.metric("rollcall_storage_pending_writes") == 0)
    }
}
