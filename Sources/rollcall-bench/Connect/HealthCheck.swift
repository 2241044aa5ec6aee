import Foundation

/// `GET /healthz` over a plain TCP socket to 127.0.0.1 (one descriptor, 5 s timeouts), to
/// confirm the broker still answers HTTP at its peak.
enum HealthCheck {
    /// The HTTP status code, or nil when there was no answer.
    static func status(port: UInt16) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
        var buffer = [UInt8](repeating: 0, count: 512)
        let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard read > 12 else { return nil }
        // "HTTP/1.1 200 OK"
        let line = String(decoding: buffer[0..<read], as: UTF8.self)
        let parts = line.split(separator: " ", maxSplits: 2)
        return parts.count >= 2 ? Int(parts[1]) : nil
    }

    /// The port of a `ws://127.0.0.1:PORT/v1` URL.
    static func port(of url: String) -> UInt16? {
        guard let afterScheme = url.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first,
              let text = afterScheme.split(separator: ":").last else { return nil }
        return UInt16(text)
    }
}
