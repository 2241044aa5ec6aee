import CBenchZlib
import Foundation

/// A bench client connection without a WebSocket library: a plain TCP socket, the upgrade
/// written and read by hand, then non-blocking reads on a ``RawSocketPool`` thread whose
/// ``WebSocketFrameScanner`` splits server frames (unmasked) and hands each `\n`-separated
/// object to ``onLine``. Sends are whole masked text frames under a lock (the driver thread
/// and the pool's pongs may both write).
///
/// Why: libwebsockets' client parser walks every payload byte through its state machine; the
/// 10,000-user storm needed 42 bench CPU seconds for 1.9 GB of JSON with it (BENCHMARKS.md).
final class RawWebSocket: @unchecked Sendable {
    let fd: Int32
    /// Called on the pool thread for every object of every text message.
    var onLine: (UnsafeRawBufferPointer) -> Void = { _ in }
    /// When set, called on the pool thread with each whole message payload instead of
    /// ``onLine`` (binary protocols such as MQTT over WebSocket).
    var onPayload: ((UnsafeRawBufferPointer) -> Void)?
    /// Called once on the pool thread when the socket ends (EOF, error, or a close frame).
    var onClose: () -> Void = {}
    var scanner = WebSocketFrameScanner()
    private var sendLock = pthread_mutex_t()
    private(set) var isClosed = false
    /// Bytes and messages received (pool thread; read racily for progress only).
    var bytesReceived = 0
    var messagesReceived = 0
    /// Bytes of compressed messages after inflating them (pool thread; 0 without deflate).
    var bytesInflated = 0
    /// Why the socket ended, once it has: "close CODE" (a close frame), "inflate error", or nil
    /// for EOF or a read error (pool thread; read after ``onClose``).
    var endReason: String?
    /// The broker accepted permessage-deflate in the upgrade (only when offered).
    private(set) var isCompressed = false

    /// Connects to `127.0.0.1:port` and upgrades on `path`; throws when the broker refuses.
    /// `deflate` offers permessage-deflate (`client_max_window_bits`, as browsers do); when the
    /// broker accepts it, compressed messages are inflated before they are scanned.
    init(port: Int, path: String = "/v1", subprotocol: String = "rollcall.v1", deflate: Bool = false) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawSocketError("socket: \(String(cString: strerror(errno)))") }
        pthread_mutex_init(&sendLock, nil)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw RawSocketError("connect: \(reason)")
        }
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        do {
            try upgrade(path: path, port: port, subprotocol: subprotocol, deflate: deflate)
        } catch {
            close(fd)
            throw error
        }
        if isCompressed {
            guard let inflater = bench_inflater_new() else {
                close(fd)
                throw RawSocketError("zlib: cannot allocate an inflate stream")
            }
            scanner.inflater = inflater
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        if !isClosed { close(fd) }
        pthread_mutex_destroy(&sendLock)
        bench_inflater_free(scanner.inflater)
    }

    /// The HTTP upgrade, blocking (before the socket joins a pool). The broker sends nothing
    /// after its `101` until the first request, so reading up to the blank line reads no frame.
    private func upgrade(path: String, port: Int, subprotocol: String, deflate: Bool) throws {
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        let offer = deflate ? "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" : ""
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: \(subprotocol)\r\n"
            + offer + "\r\n"
        guard writeAll(Array(request.utf8)) else { throw RawSocketError("upgrade: write failed") }
        var response: [UInt8] = []
        var byte: UInt8 = 0
        while !response.ends(with: [13, 10, 13, 10]) {
            guard response.count < 8192, read(fd, &byte, 1) == 1 else { throw RawSocketError("upgrade: no response") }
            response.append(byte)
        }
        guard response.starts(with: Array("HTTP/1.1 101".utf8)) else {
            throw RawSocketError("upgrade refused: \(String(decoding: response.prefix(40), as: UTF8.self))")
        }
        let head = String(decoding: response, as: UTF8.self).lowercased()
        isCompressed = deflate && head.contains("\r\nsec-websocket-extensions: permessage-deflate")
    }

    /// Sends one text frame (masked, as a client must).
    @discardableResult
    func send(text: String) -> Bool { send(opcode: 0x1, payload: Array(text.utf8)) }

    /// Sends one frame with `opcode` (text 0x1, pong 0xA, close 0x8).
    @discardableResult
    func send(opcode: UInt8, payload: [UInt8]) -> Bool {
        var frame: [UInt8] = [0x80 | opcode]
        frame.reserveCapacity(payload.count + 14)
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index & 3]) }
        pthread_mutex_lock(&sendLock)
        defer { pthread_mutex_unlock(&sendLock) }
        return !isClosed && writeAll(frame)
    }

    /// Writes everything, waiting with `poll` while the socket buffer is full.
    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written > 0 {
                offset += written
            } else if written < 0, errno == EAGAIN || errno == EINTR {
                var pollFD = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pollFD, 1, 100)
            } else {
                return false
            }
        }
        return true
    }

    /// Reads what is there (pool thread) and scans it; false once the socket ended.
    func readAvailable(into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count > 0 {
                bytesReceived += count
                let ended = scanner.scan(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), connection: self)
                if ended { return false }
                if count < buffer.count { return true }
            } else if count < 0, errno == EAGAIN || errno == EINTR {
                return true
            } else {
                return false
            }
        }
    }

    /// Closes the socket (pool thread, or the owner once the pool stopped).
    func markClosed() {
        pthread_mutex_lock(&sendLock)
        let wasOpen = !isClosed
        if wasOpen {
            isClosed = true
            close(fd)
        }
        pthread_mutex_unlock(&sendLock)
        if wasOpen { onClose() }
    }
}

/// A bench socket failure.
struct RawSocketError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
