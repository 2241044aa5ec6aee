import Foundation
import RollcallProtocol
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for webhook tests (and the key set URL's): POSIX
/// sockets, one thread per connection, every request recorded. ``answer`` decides each response (a status, or no
/// answer at all while the connection stays open).
final class WebhookReceiver: @unchecked Sendable {
    /// One request as received.
    struct Request {
        let method: String
        let path: String
        /// Header names in lowercase.
        let headers: [String: String]
        let body: [UInt8]
        let receivedAt: Date
        /// True when it was answered with a 2xx.
        var answeredOK = false

        /// The body as JSON (`.null` when it is not).
        var json: JSON { (try? JSONParser.parse(body)) ?? .null }
        var batchId: String { json["id"]?.stringValue ?? "" }
        var events: [JSON] { json["events"]?.arrayValue ?? [] }
    }

    /// How to answer one request.
    enum Answer {
        case status(Int)
        /// A status with this body as `application/json` (a JWK Set for `auth.jwksUrl`).
        case json(Int, [UInt8])
        /// Read the request, never answer (until the receiver stops).
        case hang
    }

    let port: Int
    private let listener: Int32
    private let cond = NSCondition()
    private var received: [Request] = []
    /// Accepted connections not closed yet. A descriptor is closed with `cond` held and
    /// removed from here at the same time, so ``stop()`` never shuts down a number that was
    /// closed and reused meanwhile (by then, maybe another test's libwebsockets socket).
    private var openSockets: [Int32] = []
    private var stopped = false
    /// The accept thread closes the listener (once, when `accept` fails after ``stop()``
    /// shut it down); ``stop()`` waits for that, so the port is free when it returns.
    private var listenerClosed = false
    private var answerRule: (Request) -> Answer = { _ in .status(200) }

    /// Listens on `port` (0: a free one).
    init(port: Int = 0) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw HarnessError("socket() failed") }
        self.listener = listener
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)  // `port` is not set yet, so no deinit runs to close it again
            throw HarnessError("cannot listen on 127.0.0.1:\(port): errno \(errno)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// A port nothing listens on now (bound, then released), for "receiver not started yet".
    static func freePort() throws -> Int {
        let probe = try WebhookReceiver()
        let port = probe.port
        probe.stop()
        return port
    }

    /// `http://127.0.0.1:PORT/hooks`.
    var url: String { "http://127.0.0.1:\(port)/hooks" }

    /// Sets how later requests are answered.
    func answer(_ rule: @escaping (Request) -> Answer) { cond.withLock { answerRule = rule } }

    /// Every request so far.
    var requests: [Request] { cond.withLock { received } }

    /// Requests answered 2xx so far (the batches the broker saw acknowledged).
    var acknowledged: [Request] { cond.withLock { received.filter(\.answeredOK) } }

    /// Waits until `condition` holds over the requests so far; false at the deadline.
    @discardableResult
    func wait(timeout: TimeInterval = 15, until condition: ([Request]) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        cond.lock()
        defer { cond.unlock() }
        while !condition(received) {
            if !cond.wait(until: deadline) { return condition(received) }
        }
        return true
    }

    /// Stops listening and ends every connection (their threads close them); returns once
    /// the listener is closed.
    func stop() {
        cond.lock()
        defer { cond.unlock() }
        guard !stopped else { return }
        stopped = true
        // Shut down, never close, what another thread owns: the accept thread wakes with
        // EINVAL and closes the listener, each connection thread closes its socket.
        if !listenerClosed { shutdown(listener, Int32(SHUT_RDWR)) }
        for fd in openSockets { shutdown(fd, Int32(SHUT_RDWR)) }
        let deadline = Date(timeIntervalSinceNow: 5)
        while !listenerClosed && cond.wait(until: deadline) {}
    }

    deinit { stop() }

    // MARK: - Serving

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                cond.withLock {
                    close(listener)
                    listenerClosed = true
                    cond.broadcast()
                }
                return
            }
            cond.lock()
            if stopped { cond.unlock(); close(fd); continue }  // the next accept fails
            openSockets.append(fd)
            cond.unlock()
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            cond.withLock {
                openSockets.removeAll { $0 == fd }
                close(fd)
            }
        }
        guard var request = readRequest(fd) else { return }
        let rule = cond.withLock { answerRule }
        let answer = rule(request)
        switch answer {
        case .status(let status), .json(let status, _): request.answeredOK = (200...299).contains(status)
        case .hang: break
        }
        cond.withLock {
            received.append(request)
            cond.broadcast()
        }
        switch answer {
        case .status(let status):
            let text = "HTTP/1.1 \(status) Status\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            _ = Array(text.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        case .json(let status, let body):
            let head = "HTTP/1.1 \(status) Status\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            _ = (Array(head.utf8) + body).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        case .hang:
            var byte: UInt8 = 0
            while recv(fd, &byte, 1, 0) > 0 {}  // until the broker gives up or the receiver stops
        }
    }

    private func readRequest(_ fd: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            data += buffer[..<count]
            headerEnd = Self.find(Array("\r\n\r\n".utf8), in: data)
        }
        let head = String(decoding: data[..<headerEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        var body = Array(data[(headerEnd! + 4)...])
        while body.count < length {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            body += buffer[..<count]
        }
        return Request(method: requestLine.first.map(String.init) ?? "", path: requestLine.dropFirst().first.map(String.init) ?? "",
                       headers: headers, body: Array(body.prefix(length)), receivedAt: Date())
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
