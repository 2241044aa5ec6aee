import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP connection to 127.0.0.1 for hand-made HTTP and WebSocket traffic.
final class RawSocket {
    private(set) var fd: Int32
    /// How long one blocking connect, send or recv may take (`SO_SNDTIMEO`, `SO_RCVTIMEO`).
    static let backstopSeconds = 20

    /// Connects to 127.0.0.1:`port`. `receiveBufferBytes` sets `SO_RCVBUF` before the
    /// connect (a small value makes a reader that stops reading stall its peer quickly).
    init(port: Int, receiveBufferBytes: Int? = nil) throws {
        fd = try Self.connected(port: port, receiveBufferBytes: receiveBufferBytes)
    }

    /// A socket connected to 127.0.0.1:`port`, or a throw with nothing left open.
    ///
    /// The descriptor becomes `fd` only once connected: a class whose stored properties are
    /// all set runs its `deinit` when its `init` throws, so a failed connect that closed a
    /// stored `fd` used to close that number a second time — by then often a libwebsockets
    /// socket of another test (docs/testing.md, "Descriptors").
    private static func connected(port: Int, receiveBufferBytes: Int?) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket() failed") }
        if var size = receiveBufferBytes.map(Int32.init) {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        // A backstop for every blocking call (connect, send, recv): a broker that stopped
        // serving makes the test fail after this long instead of hanging it.
        var backstop = timeval(tv_sec: Self.backstopSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &backstop, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &backstop, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let error = errno
            Glibc.close(fd)
            throw HarnessError("connect to port \(port) failed: errno \(error)")
        }
        return fd
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw HarnessError("send failed: errno \(errno)") }
            offset += sent
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads what is available, waiting up to `timeout`; `[]` means the peer closed
    /// (or reset), nil means nothing arrived in time.
    func receive(timeout: TimeInterval, max limit: Int = 65536) -> [UInt8]? {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pollfd, 1, Int32(max(0, timeout * 1000)))
        if ready == 0 { return nil }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, limit, 0) }
        if count <= 0 { return [] }
        return Array(buffer[..<count])
    }

    /// Reads until the peer closes or `timeout` passes.
    func readToEnd(timeout: TimeInterval) -> (bytes: [UInt8], closed: Bool) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var all: [UInt8] = []
        while Date() < deadline {
            guard let chunk = receive(timeout: deadline.timeIntervalSinceNow) else { break }
            if chunk.isEmpty { return (all, true) }
            all += chunk
        }
        return (all, false)
    }

    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    deinit { close() }
}

/// A parsed HTTP/1.1 response.
struct HTTPResponse {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]
    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Minimal HTTP/1.1 client for `/healthz`, `/metrics`, `/` and refused upgrades.
enum RawHTTP {
    /// Sends `GET path` with `Connection: close` (plus `extraHeaders`) and reads the response.
    static func get(port: Int, path: String, extraHeaders: [String] = [], timeout: TimeInterval = 5) throws -> HTTPResponse {
        let socket = try RawSocket(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for header in extraHeaders { request += header + "\r\n" }
        request += "\r\n"
        try socket.send(request)
        return try readResponse(socket, timeout: timeout)
    }

    /// Reads one response: until its body is complete (`Content-Length`, or the last chunk of a
    /// chunked body), the peer closes, or `timeout` passes. Bytes past the response (a
    /// pipelined answer) are not read, or kept in `leftover` when given.
    static func readResponse(_ socket: RawSocket, timeout: TimeInterval) throws -> HTTPResponse {
        var leftover: [UInt8] = []
        return try readResponse(socket, timeout: timeout, leftover: &leftover)
    }

    /// ``readResponse(_:timeout:)`` starting with `leftover` (bytes already read); what was
    /// read past this response is left in `leftover`.
    static func readResponse(_ socket: RawSocket, timeout: TimeInterval, leftover: inout [UInt8]) throws -> HTTPResponse {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var data = leftover
        leftover = []
        var headerEnd: Int? = nil
        var contentLength: Int? = nil
        var chunked = false
        func complete() -> Int? {  // the response's length once complete
            guard let end = headerEnd else { return nil }
            if data.starts(with: Array("HTTP/1.1 101".utf8)) { return data.count }  // now a WebSocket
            if let length = contentLength { return data.count - end >= length ? end + length : nil }
            if chunked, let last = find(Array("0\r\n\r\n".utf8), in: data, from: end) { return last + 5 }
            return nil
        }
        func parseHead() {
            guard headerEnd == nil, let range = findHeaderEnd(data) else { return }
            headerEnd = range
            let headers = parseHeaders(String(decoding: data[..<range], as: UTF8.self)).1
            contentLength = headers["content-length"].flatMap { Int($0) }
            chunked = headers["transfer-encoding"]?.lowercased() == "chunked"
        }
        parseHead()
        while complete() == nil, Date() < deadline {
            guard let chunk = socket.receive(timeout: deadline.timeIntervalSinceNow) else { break }
            if chunk.isEmpty { break }
            data += chunk
            parseHead()
        }
        guard let end = headerEnd else { throw HarnessError("no HTTP response header (got \(data.count) bytes)") }
        if let length = complete(), length < data.count {
            leftover = Array(data[length...])
            data = Array(data[..<length])
        }
        let (status, headers) = parseHeaders(String(decoding: data[..<end], as: UTF8.self))
        var body = Array(data[end...])
        if chunked { body = dechunk(body) }
        return HTTPResponse(status: status, headers: headers, body: body)
    }

    /// Reads pipelined responses until `count` arrived, the peer closed, or `timeout` passed.
    /// `closed` is true when the peer closed after the last complete response (a clean close);
    /// `trailing` holds bytes of an incomplete response, if any.
    static func readResponses(_ socket: RawSocket, count: Int, timeout: TimeInterval)
        -> (responses: [HTTPResponse], closed: Bool, trailing: [UInt8]) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var responses: [HTTPResponse] = []
        var pending: [UInt8] = []
        while responses.count < count {
            // Wait for the next response's first bytes (or the close) before parsing one.
            if pending.isEmpty {
                guard let chunk = socket.receive(timeout: max(0, deadline.timeIntervalSinceNow)) else { return (responses, false, []) }
                if chunk.isEmpty { return (responses, true, []) }
                pending = chunk
            }
            let before = pending
            guard let response = try? readResponse(socket, timeout: max(0, deadline.timeIntervalSinceNow), leftover: &pending),
                  let length = response.headers["content-length"].flatMap(Int.init), response.body.count == length else {
                return (responses, false, before)
            }
            responses.append(response)
        }
        return (responses, false, pending)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count - start >= needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index..<(index + needle.count)].elementsEqual(needle) {
            return index
        }
        return nil
    }

    private static func findHeaderEnd(_ data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for index in 0...(data.count - 4) where data[index] == 13 && data[index + 1] == 10 && data[index + 2] == 13 && data[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    private static func parseHeaders(_ head: String) -> (Int, [String: String]) {
        let lines = head.components(separatedBy: "\r\n")
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    private static func dechunk(_ body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < body.count {
            guard let lineEnd = (index..<body.count - 1).first(where: { body[$0] == 13 && body[$0 + 1] == 10 }) else { break }
            let sizeText = String(decoding: body[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            out += body[start..<min(body.count, start + size)]
            index = start + size + 2
        }
        return out
    }
}

/// A hand-made WebSocket client that never answers pings (lws clients always do), to
/// provoke the broker's heartbeat timeout.
final class SilentWebSocket {
    let socket: RawSocket
    private var buffer: [UInt8] = []
    /// Pings received so far.
    private(set) var pingsReceived = 0
    /// The code of the broker's close frame, once one arrived.
    private(set) var closeCode: UInt16?

    /// Connects and completes the upgrade on `path`; throws unless the answer is 101.
    init(port: Int, path: String = "/v1", receiveBufferBytes: Int? = nil) throws {
        socket = try RawSocket(port: port, receiveBufferBytes: receiveBufferBytes)
        try socket.send(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let deadline = Date(timeIntervalSinceNow: 5)
        while Date() < deadline {
            guard let chunk = socket.receive(timeout: deadline.timeIntervalSinceNow), !chunk.isEmpty else { break }
            buffer += chunk
            if let end = (0..<max(0, buffer.count - 3)).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 4)
                guard head.hasPrefix("HTTP/1.1 101") else { throw HarnessError("upgrade refused: \(head)") }
                return
            }
        }
        throw HarnessError("no upgrade response")
    }

    /// Sends one masked text frame.
    func sendText(_ text: String) throws { try sendFrame(Array(text.utf8)) }

    /// Sends one masked frame: `opcode` 1 text, 2 binary, 0 continuation; `fin` false for
    /// all but the last fragment of a message.
    func sendFrame(_ payload: [UInt8], opcode: UInt8 = 0x1, fin: Bool = true) throws {
        try socket.send(Self.maskedFrame(payload, opcode: opcode, fin: fin))
    }

    /// One client frame (masked, as RFC 6455 requires of clients).
    static func maskedFrame(_ payload: [UInt8], opcode: UInt8 = 0x1, fin: Bool = true) -> [UInt8] {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode]
        if payload.count < 126 { frame.append(0x80 | UInt8(payload.count)) }
        else if payload.count <= 0xffff { frame.append(0x80 | 126); frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xff)] }
        else { frame.append(0x80 | 127); frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) } }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    /// Reads frames (counting pings, answering nothing) until the broker ends the TCP
    /// connection or `timeout` passes. Returns the text frames seen and whether it closed.
    func readUntilClosed(timeout: TimeInterval) -> (texts: [String], closeCode: UInt16?, closed: Bool) {
        read(timeout: timeout) { _ in false }
    }

    /// Reads frames until a text frame contains `text` (true) or the connection ends or
    /// `timeout` passes (false).
    func waitForText(containing text: String, timeout: TimeInterval) -> Bool {
        var found = false
        _ = read(timeout: timeout) { texts in
            found = texts.contains { $0.contains(text) }
            return found
        }
        return found
    }

    /// Reads frames until `done(texts so far)` holds, the broker ends the connection, or
    /// `timeout` passes.
    func read(timeout: TimeInterval, until done: ([String]) -> Bool) -> (texts: [String], closeCode: UInt16?, closed: Bool) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var texts: [String] = []
        var closeCode: UInt16? = nil
        while true {
            while let (opcode, payload) = nextFrame() {
                switch opcode {
                case 0x1: texts.append(String(decoding: payload, as: UTF8.self))
                case 0x8:
                    closeCode = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                    self.closeCode = closeCode
                case 0x9: pingsReceived += 1
                default: break
                }
            }
            if done(texts) { return (texts, closeCode, false) }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return (texts, closeCode, false) }
            guard let chunk = socket.receive(timeout: remaining) else { return (texts, closeCode, false) }
            if chunk.isEmpty { return (texts, closeCode, true) }
            buffer += chunk
        }
    }

    private func nextFrame() -> (UInt8, [UInt8])? {
        guard buffer.count >= 2 else { return nil }
        let opcode = buffer[0] & 0x0f
        var length = Int(buffer[1] & 0x7f)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = Int(buffer[2]) << 8 | Int(buffer[3]); offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }; offset = 10
        }
        guard buffer.count >= offset + length else { return nil }
        let payload = Array(buffer[offset..<offset + length])
        buffer.removeFirst(offset + length)
        return (opcode, payload)
    }
}
