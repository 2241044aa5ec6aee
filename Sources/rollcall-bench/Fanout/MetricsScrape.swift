import Foundation

/// Reads counters from the broker's `GET /metrics` (Prometheus text) over a plain blocking
/// socket to 127.0.0.1 — e.g. frames and objects written, to show how many objects one
/// write carries.
struct MetricsScrape {
    let port: UInt16

    /// The port of a `ws://127.0.0.1:PORT/v1` URL; nil for anything else.
    init?(url: String) {
        guard url.hasPrefix("ws://127.0.0.1:") || url.hasPrefix("ws://localhost:"),
              let portText = url.split(separator: ":").last?.split(separator: "/").first,
              let port = UInt16(portText) else { return nil }
        self.port = port
    }

    /// The values of the named unlabelled counters; nil when the page cannot be read.
    func read(_ names: [String]) -> [String: Double]? {
        guard let text = fetch() else { return nil }
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, names.contains(String(parts[0])), let value = Double(parts[1]) else { continue }
            values[String(parts[0])] = value
        }
        return values
    }

    /// The response body of `GET /metrics` (HTTP/1.0, read to EOF; at most 1 MiB, 2 s).
    private func fetch() -> String? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { return nil }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while response.count < 1 << 20 {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: chunk[0..<count])
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let bodyStart = text.range(of: "\r\n\r\n") else { return nil }
        return String(text[bodyStart.upperBound...])
    }
}
