import Foundation

/// A throwaway `redis-server` for the cluster scenario: a free loopback port, no
/// persistence, a temporary `--dir`; never the system service. Stopped by its own PID.
final class RedisServerProcess {
    /// Errors while starting or talking to the server.
    struct RedisError: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    private let process = Process()
    private let directory: URL
    var pid: Int32 { process.processIdentifier }

    /// `redis://127.0.0.1:<port>`, for `cluster.redis`.
    var url: String { "redis://127.0.0.1:\(port)" }

    /// Starts `binary` (with `extraArguments` after the bench's own) and waits (up to 10 s)
    /// until it answers `PING`.
    init(binary: String = "/usr/bin/redis-server", extraArguments: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw RedisError(description: "redis-server not found at \(binary) (make build installs it)")
        }
        port = try FreePort.pick()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-bench-redis-\(getpid())-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", directory.path, "--logfile", "redis.log"] + extraArguments
        // No FileHandles: Foundation's Process closes the handles it is given in this process
        // after the spawn (a shared one like FileHandle.nullDevice then closes whatever reused
        // its number, e.g. a client socket).
        try process.run()
        let deadline = MonotonicSeconds.now + 10
        while MonotonicSeconds.now < deadline {
            if command(["PING"])?.hasPrefix("PONG") == true { return }
            usleep(50_000)
        }
        stop()
        throw RedisError(description: "redis-server on port \(port) did not answer PING")
    }

    /// Runs one command with `redis-cli` and returns its output (nil when it failed or took
    /// over 2 s: ``RedisCLI``).
    @discardableResult
    func command(_ arguments: [String]) -> String? { RedisCLI.run(port: port, arguments) }

    /// CPU seconds of the server so far (every thread, from schedstat).
    var cpuSeconds: Double { ThreadCPU.seconds(pid: pid) ?? 0 }

    /// SIGSTOP: the server keeps its sockets but answers nothing.
    func suspend() { kill(pid, SIGSTOP) }

    /// SIGCONT.
    func resume() { kill(pid, SIGCONT) }

    /// SIGCONT (in case it is stopped), SIGTERM, wait up to 5 s, then SIGKILL; removes the directory.
    func stop() {
        if process.isRunning {
            resume()
            process.terminate()
            let deadline = MonotonicSeconds.now + 5
            while process.isRunning, MonotonicSeconds.now < deadline { usleep(20_000) }
            if process.isRunning { kill(pid, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A TCP port on 127.0.0.1 that is free now (bound to port 0, read back, closed).
enum FreePort {
    static func pick() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RedisServerProcess.RedisError(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw RedisServerProcess.RedisError(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
