import Foundation

/// A throwaway `redis-server` on a fixed free loopback port and its own temporary `--dir`
/// that can be stopped (SIGSTOP), killed (-9) and started again on the same port and files,
/// e.g. with the append-only file so that a restart keeps the data. Never the system service;
/// signalled by its own PID only.
final class RedisInstance {
    let port: Int
    let directory: URL
    private let binary: String
    private let arguments: [String]
    private let configFile: String?
    private var process: Process?

    /// `redis://127.0.0.1:<port>`.
    var url: String { "redis://127.0.0.1:\(port)" }
    var pid: Int32? { process?.processIdentifier }

    /// Starts `binary` with `arguments` after the port, bind, dir and log file, and waits
    /// until it answers PING. With `configLines`, they are written to `redis.conf` in its
    /// directory first, and that file is the first argument (a sentinel needs one it can rewrite).
    init(binary: String, arguments: [String], configLines: [String]? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw RedisServerProcess.RedisError(description: "redis-server not found at \(binary) (make build installs it)")
        }
        self.binary = binary
        self.arguments = arguments
        port = try FreePort.pick()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-bench-faults-\(getpid())-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let configLines {
            let file = directory.appendingPathComponent("redis.conf")
            try (configLines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
            configFile = file.path
        } else {
            configFile = nil
        }
        try start()
    }

    /// Starts the server again (after ``kill9()``) on the same port and directory, and waits
    /// (up to 20 s) until it answers PING, e.g. once it has loaded its append-only file.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = (configFile.map { [$0] } ?? []) + ["--port", "\(port)", "--bind", "127.0.0.1", "--dir", directory.path,
                             "--logfile", "redis.log"] + arguments
        process.currentDirectoryURL = directory
        try process.run()
        self.process = process
        let deadline = MonotonicSeconds.now + 20
        while MonotonicSeconds.now < deadline {
            if RedisCLI.run(port: port, ["PING"])?.hasPrefix("PONG") == true { return }
            usleep(10_000)
        }
        throw RedisServerProcess.RedisError(description: "redis-server on port \(port) did not answer PING")
    }

    /// Runs one command with redis-cli (nil when it failed).
    @discardableResult
    func command(_ arguments: [String]) -> String? { RedisCLI.run(port: port, arguments) }

    /// SIGSTOP: the server keeps its sockets but answers nothing.
    func suspend() { if let pid { kill(pid, SIGSTOP) } }

    /// SIGCONT.
    func resume() { if let pid { kill(pid, SIGCONT) } }

    /// SIGKILL and wait for the exit.
    func kill9() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The server's log so far.
    var log: String { (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? "" }

    /// SIGCONT, SIGKILL, and removes the directory.
    func stop() {
        resume()
        kill9()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// `redis-cli` against 127.0.0.1.
enum RedisCLI {
    /// The output of one command on `port` (nil when redis-cli failed or timed out after 2 s).
    static func run(port: Int, _ arguments: [String]) -> String? {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-h", "127.0.0.1", "-p", "\(port)"] + arguments
        let output = Pipe()
        cli.standardOutput = output
        let errors = Pipe()
        cli.standardError = errors
        guard (try? cli.run()) != nil else { return nil }
        let watchdog = DispatchWorkItem { if cli.isRunning { cli.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 2, execute: watchdog)
        _ = errors.fileHandleForReading.readDataToEndOfFile()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        cli.waitUntilExit()
        watchdog.cancel()
        return cli.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
    }
}
