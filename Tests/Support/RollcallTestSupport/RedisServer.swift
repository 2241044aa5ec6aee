import Foundation
import RollcallRedis

/// Why a test harness could not do what it was asked.
public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A throwaway `redis-server` for tests: on a free loopback port, no persistence unless asked
/// for (``init(password:appendOnly:startTimeout:)``), its own temporary directory, killed at the
/// end. Never the system service on 6379.
///
/// The cluster tests start one of these and point several broker nodes at ``url``.
public final class RedisServer: @unchecked Sendable {
    /// The loopback port it listens on (kept across ``restart()``).
    public let port: Int
    /// `requirepass`, or nil.
    public let password: String?
    /// True when it runs with `appendonly yes` (`appendfsync everysec`): a `SHUTDOWN` then
    /// ``startAgainAfterShutdown(timeout:)`` keeps every write.
    public let appendOnly: Bool
    /// Further `redis-server` arguments (e.g. `--replicaof 127.0.0.1 PORT`).
    public let extraArguments: [String]
    /// The TLS port next to the plain one (``init(tls:password:)``), or nil.
    public let tlsPort: Int?

    /// A TLS listener's files: the server's certificate and key, the CA that client
    /// certificates must chain to, and whether clients must present one (`--tls-auth-clients`).
    public struct TLS: Sendable {
        public var certFile: String
        public var keyFile: String
        public var caFile: String
        public var requireClientCertificate: Bool
        public init(certFile: String, keyFile: String, caFile: String, requireClientCertificate: Bool = false) {
            self.certFile = certFile
            self.keyFile = keyFile
            self.caFile = caFile
            self.requireClientCertificate = requireClientCertificate
        }
    }
    private let directory: URL
    private var process: ChildProcess?

    /// The `redis-server` binary: `$REDIS_SERVER`, else the first `redis-server` on `PATH`.
    public static var binary: String? {
        if let path = ProcessInfo.processInfo.environment["REDIS_SERVER"], !path.isEmpty { return path }
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in paths + ["/usr/bin", "/usr/sbin"] {
            let candidate = "\(directory)/redis-server"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Starts `redis-server` (with `requirepass` when `password` is set, with the append-only
    /// file when `appendOnly`, and with `arguments` after the harness's own) and waits until it answers.
    public init(password: String? = nil, appendOnly: Bool = false, arguments: [String] = [], startTimeout: TimeInterval = 10) throws {
        self.password = password
        self.appendOnly = appendOnly
        extraArguments = arguments
        tlsPort = nil
        port = try Self.freeLoopbackPort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try launch(timeout: startTimeout)
    }

    /// A server that also listens with TLS on ``tlsPort`` (`--tls-port`, with `tls`'s files, and
    /// `arguments` after them); the plain ``port`` stays for the harness (its readiness check,
    /// `CONFIG SET` of the certificate from tests).
    public init(tls: TLS, password: String? = nil, arguments: [String] = [], startTimeout: TimeInterval = 10) throws {
        self.password = password
        appendOnly = false
        port = try Self.freeLoopbackPort()
        var tlsPort = try Self.freeLoopbackPort()
        while tlsPort == port { tlsPort = try Self.freeLoopbackPort() }
        self.tlsPort = tlsPort
        extraArguments = [
            "--tls-port", String(tlsPort), "--tls-cert-file", tls.certFile, "--tls-key-file", tls.keyFile,
            "--tls-ca-cert-file", tls.caFile, "--tls-auth-clients", tls.requireClientCertificate ? "yes" : "no",
        ] + arguments
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try launch(timeout: startTimeout)
    }

    /// `rediss://[:password@]HOST:TLSPORT` (nil without TLS); `host` is what the certificate must name.
    public func tlsURL(host: String = "127.0.0.1") -> String? {
        tlsPort.map { "rediss://" + (password.map { ":\($0)@" } ?? "") + "\(host):\($0)" }
    }

    /// `redis://[:password@]127.0.0.1:PORT[/database]`.
    public func url(database: Int = 0) -> String {
        "redis://" + (password.map { ":\($0)@" } ?? "") + "127.0.0.1:\(port)" + (database == 0 ? "" : "/\(database)")
    }

    /// The endpoint of ``url(database:)``.
    public func endpoint(database: Int = 0) -> RedisEndpoint {
        RedisEndpoint(host: "127.0.0.1", port: port, password: password, database: database)
    }

    /// The server's process id while it runs.
    public var pid: Int32? { process.flatMap { $0.status == nil ? $0.pid : nil } }

    /// SIGSTOP: the server keeps its sockets open but answers nothing.
    public func suspend() { signal(SIGSTOP) }

    /// SIGCONT after ``suspend()``.
    public func resume() { signal(SIGCONT) }

    /// SIGKILL, waiting for the exit (every connection is reset; the data is gone).
    public func kill() {
        guard let process, process.status == nil else { return }
        signal(SIGCONT)
        signal(SIGKILL)
        _ = process.waitForExit(timeout: 30)
    }

    /// Starts a new, empty server on the same port after ``kill()``.
    public func restart(timeout: TimeInterval = 10) throws {
        kill()
        try launch(timeout: timeout)
    }

    /// Starts the server again on the same port, in the same folder, once it exited by itself
    /// (after `SHUTDOWN SAVE`: it loads the saved data at start).
    public func startAgainAfterShutdown(timeout: TimeInterval = 10) throws {
        if let process { _ = process.waitForExit(timeout: timeout) }
        try launch(timeout: timeout)
    }

    /// Everything the server logged (for failure messages).
    public var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    private func signal(_ number: Int32) {
        guard let pid else { return }
        _ = Foundation.kill(pid, number)
    }

    private func launch(timeout: TimeInterval) throws {
        guard let binary = Self.binary else {
            throw TestSupportError("redis-server not found (`make deps` installs it, or set REDIS_SERVER)")
        }
        var arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", appendOnly ? "yes" : "no",
            "--appendfsync", "everysec",
            "--daemonize", "no", "--dir", directory.path, "--logfile", "redis.log",
        ]
        if let password { arguments += ["--requirepass", password, "--masterauth", password] }
        arguments += extraArguments
        // ChildProcess, not Foundation's Process: no dispatch or run-loop source of Process
        // watches a descriptor of this process (docs/testing.md, "Descriptors"). It logs to
        // `--logfile`; its empty stdout and stderr are read to EOF by ChildProcess's readers.
        let process = try ChildProcess(executable: binary, arguments: arguments, directory: directory.path)
        self.process = process
        let deadline = Date().addingTimeInterval(timeout)
        while !Self.answersPing(port: port) {
            guard process.status == nil, Date() < deadline else {
                kill()
                throw TestSupportError("redis-server on port \(port) did not start; log:\n\(log)")
            }
            usleep(10_000)
        }
    }

    /// True when something on 127.0.0.1:`port` answers an inline `PING` with a RESP line
    /// (`+PONG`, or `-NOAUTH` when a password is required).
    static func answersPing(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return false }
        let ping = Array("PING\r\n".utf8)
        guard write(fd, ping, ping.count) == ping.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, buffer.count)
        return count > 0 && (buffer[0] == UInt8(ascii: "+") || buffer[0] == UInt8(ascii: "-"))
    }

    /// Runs one command (words without spaces, sent inline) on this server and returns the
    /// first line of its reply (`+OK`, `:1`, `-ERR …`), blocking the calling thread: nothing on
    /// any event loop runs meanwhile, so a test can change Redis between two steps of a node.
    public func command(_ words: [String]) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = Self.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestSupportError("no redis-server on port \(port)") }
        let line = Array(((password.map { ["AUTH", $0].joined(separator: " ") + "\r\n" } ?? "") + words.joined(separator: " ") + "\r\n").utf8)
        guard write(fd, line, line.count) == line.count else { throw TestSupportError("write to redis-server failed") }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        let lines = password == nil ? 1 : 2
        while received.filter({ $0 == 10 }).count < lines {
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { throw TestSupportError("redis-server closed before answering \(words.first ?? "?")") }
            received += buffer[..<count]
        }
        let text = String(decoding: received, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: true)
        return String(text[lines - 1])
    }

    /// A port that was free on 127.0.0.1 a moment ago (bound to port 0, then released).
    static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw TestSupportError("bind() to a free loopback port failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
