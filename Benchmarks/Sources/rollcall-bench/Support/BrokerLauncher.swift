import Foundation

/// Starts a `rollcall` process on 127.0.0.1 with an ephemeral port and a temporary config
/// (in-memory storage, warning logs), and stops it by its own PID.
final class BrokerLauncher {
    /// Errors while starting the broker.
    struct LaunchError: Error, CustomStringConvertible {
        let description: String
    }

    /// `rollcall` in the same directory as this bench executable when there is one (a copy of
    /// both in one folder); else the release broker of the repository the bench was built in,
    /// `.build-release/release/rollcall` beside `Benchmarks/` (`make release` builds both).
    static var defaultBinary: String {
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let besideMe = me.deletingLastPathComponent().appendingPathComponent("rollcall").path
        if FileManager.default.isExecutableFile(atPath: besideMe) { return besideMe }
        var folder = me.deletingLastPathComponent()
        while folder.path != "/" {
            if folder.lastPathComponent == "Benchmarks",
               FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
                return folder.deletingLastPathComponent().appendingPathComponent(".build-release/release/rollcall").path
            }
            folder = folder.deletingLastPathComponent()
        }
        return besideMe
    }

    let process = Process()
    let url: String
    var pid: Int32 { process.processIdentifier }
    private let configURL: URL

    /// Launches `binary` and waits (up to 20 s) for its `listening on HOST:PORT` line.
    init(binary: String, config: [String: Any]) throws {
        var merged: [String: Any] = [
            "listen": ["host": "127.0.0.1", "port": 0],
            "storage": ["path": NSNull()],
            "log": ["level": "warning"],
        ]
        for (key, value) in config { merged[key] = value }
        configURL = FileManager.default.temporaryDirectory
            .appendingPathComponent("rollcall-bench-\(getpid())-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: merged).write(to: configURL)
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw LaunchError(description: "broker binary not found at \(binary) (use --binary)")
        }
        let stdout = Pipe()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--config", configURL.path, "--port", "0"]
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        try process.run()
        let reader = LineReader(handle: stdout.fileHandleForReading)
        let deadline = Date().addingTimeInterval(20)
        var port: Int?
        while port == nil, Date() < deadline, let line = reader.nextLine() {
            if line.hasPrefix("listening on "), let text = line.split(separator: ":").last { port = Int(text) }
        }
        guard let port else {
            process.terminate()
            throw LaunchError(description: "broker did not report its port")
        }
        url = "ws://127.0.0.1:\(port)/v1"
        // Keep draining stdout so the broker never blocks on a full pipe.
        Thread.detachNewThread { while reader.nextLine() != nil {} }
    }

    /// SIGTERM, wait up to 5 s, then SIGKILL — this process only.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: configURL)
    }
}

/// Reads `\n`-terminated lines from a pipe (blocking).
final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private var buffer: [UInt8] = []

    init(handle: FileHandle) { self.handle = handle }

    /// The next line without its newline; nil at end of file.
    func nextLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return buffer.isEmpty ? nil : String(decoding: buffer, as: UTF8.self) }
            buffer.append(contentsOf: chunk)
        }
    }
}
