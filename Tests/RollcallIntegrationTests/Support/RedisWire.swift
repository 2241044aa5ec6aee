import Foundation

/// One Redis command over a plain TCP connection (RESP), for tests that put data into Redis
/// behind the brokers' backs (foreign keys under a prefix). No client library involved.
enum RedisWire {
    /// Sends `arguments` as one RESP array to 127.0.0.1:`port` and returns the first reply
    /// line (`+OK`, `:1`, `-ERR …`).
    static func command(port: Int, _ arguments: [String], timeout: TimeInterval = 5) throws -> String {
        let socket = try RawSocket(port: port)
        var request = "*\(arguments.count)\r\n"
        for argument in arguments { request += "$\(argument.utf8.count)\r\n\(argument)\r\n" }
        try socket.send(request)
        let deadline = Date(timeIntervalSinceNow: timeout)
        var received: [UInt8] = []
        while Date() < deadline {
            guard let chunk = socket.receive(timeout: deadline.timeIntervalSinceNow), !chunk.isEmpty else { break }
            received += chunk
            if let end = received.firstIndex(of: 10) { return String(decoding: received[..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        throw HarnessError("no reply from Redis on port \(port) to \(arguments.first ?? "?")")
    }
}
