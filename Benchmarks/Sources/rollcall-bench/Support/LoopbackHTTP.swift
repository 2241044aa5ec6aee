import Foundation
import RollcallClient

/// A minimal blocking HTTP/1.0 GET to the broker on 127.0.0.1 (one descriptor, bounded in
/// time and size), for `/healthz` and `/metrics` while a scenario runs.
struct LoopbackHTTP {
    /// The broker's HTTP port.
    let port: UInt16

    /// The port of a `ws://127.0.0.1:PORT/…` or `ws://localhost:PORT/…` URL; nil for anything else.
    init?(url: String) {
        guard let parsed = try? WebSocketURL(url), !parsed.secure,
              parsed.host == "127.0.0.1" || parsed.host == "localhost",
              let port = UInt16(exactly: parsed.port) else { return nil }
        self.port = port
    }

    /// The status code and body of `GET path`, read to the end (at most `maxBytes`, each read
    /// waiting at most `timeoutSeconds`); nil when there was no complete answer.
    func get(_ path: String, timeoutSeconds: Int = 2, maxBytes: Int = 1 << 20) -> (status: Int, body: String)? {
        exchange("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", timeoutSeconds: timeoutSeconds, maxBytes: maxBytes)
    }

    /// `POST path` with a JSON `body` and `Authorization: Bearer <bearer>` (the server API),
    /// read as ``get(_:timeoutSeconds:maxBytes:)`` reads.
    func post(_ path: String, body: String, bearer: String, timeoutSeconds: Int = 2,
              maxBytes: Int = 1 << 20) -> (status: Int, body: String)? {
        let bytes = Array(body.utf8)
        return exchange("POST \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(bearer)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: \(bytes.count)\r\n\r\n\(body)",
                        timeoutSeconds: timeoutSeconds, maxBytes: maxBytes)
    }

    /// Sends `request` whole on a new connection and reads the answer to its end.
    private func exchange(_ requestText: String, timeoutSeconds: Int, maxBytes: Int) -> (status: Int, body: String)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array(requestText.utf8)
        guard send(fd, request, request.count, 0) == request.count else { return nil }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while response.count < maxBytes {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: chunk[0..<count])
        }
        // "HTTP/1.1 200 OK\r\n…\r\n\r\nbody"
        let text = String(decoding: response, as: UTF8.self)
        let statusLine = text.split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]),
              let bodyStart = text.range(of: "\r\n\r\n") else { return nil }
        return (status, String(text[bodyStart.upperBound...]))
    }
}
