import Foundation

/// A throwaway `mosquitto` broker: a config in a temporary directory with one WebSocket
/// listener on a free loopback port, started as a child process and stopped at the end.
///
/// mosquitto 2.0.11 refuses to start ("Unable to start any listening sockets") when its only
/// listener is a WebSocket one, so an unused plain MQTT listener on a second free port is added.
final class MosquittoProcess {
    let port: Int
    let process: Process
    private let directory: URL

    var pid: Int32 { process.processIdentifier }

    init(executable: String = "mosquitto") throws {
        guard let path = Self.find(executable) else {
            throw RawSocketError("mosquitto not found (apt-get install mosquitto, or make bench)")
        }
        port = try Self.freePort()
        let spare = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("rollcall-mosquitto-\(getpid())-\(port)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var config = """
            listener \(spare) 127.0.0.1
            listener \(port) 127.0.0.1
            protocol websockets
            allow_anonymous true
            max_queued_messages 10000000
            max_queued_bytes 0
            persistence false

            """
        if getuid() == 0 { config += "user root\n" }  // no privilege drop: the temp config stays readable
        let configFile = directory.appendingPathComponent("mosquitto.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-c", configFile.path]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = try FileHandle(forWritingTo: directory.appendingPathComponent("log").creatingEmpty())
        try process.run()
        let deadline = MonotonicSeconds.now + 10
        while MonotonicSeconds.now < deadline {
            if !process.isRunning { break }
            if let probe = try? RawWebSocket(port: port, path: "/mqtt", subprotocol: "mqtt") {
                probe.markClosed()
                return
            }
            usleep(50_000)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("log"), encoding: .utf8)) ?? ""
        stop()
        throw RawSocketError("mosquitto did not open its WebSocket listener: \(log.suffix(300))")
    }

    /// Stops the broker and removes the temporary directory.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func find(_ name: String) -> String? {
        if name.contains("/") { return name }
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/usr/local/sbin:/sbin"
        return paths.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A loopback port nothing listens on now (bound to port 0 and released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw RawSocketError("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

private extension URL {
    func creatingEmpty() -> URL {
        FileManager.default.createFile(atPath: path, contents: nil)
        return self
    }
}
