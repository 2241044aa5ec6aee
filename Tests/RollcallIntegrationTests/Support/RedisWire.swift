import Foundation

/// One Redis command over a plain TCP connection (RESP), for tests that put data into Redis
/// or look at it behind the brokers' backs (foreign keys under a prefix, `CLIENT LIST`). No
/// client library involved.
enum RedisWire {
    /// Sends `arguments` as one RESP array to 127.0.0.1:`port` and returns the first reply
    /// line (`+OK`, `:1`, `-ERR …`, or `$3` for a bulk string).
    static func command(port: Int, _ arguments: [String], timeout: TimeInterval = 5) throws -> String {
        let received = try exchange(port: port, arguments, timeout: timeout) { $0.firstIndex(of: 10) != nil }
        let end = received.firstIndex(of: 10)!
        return String(decoding: received[..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Sends `arguments` and returns the payload of the bulk-string reply (`CLIENT LIST`,
    /// `GET`); throws on any other reply.
    static func bulk(port: Int, _ arguments: [String], timeout: TimeInterval = 5) throws -> String {
        func payloadRange(_ bytes: [UInt8]) -> Range<Int>? {
            guard bytes.first == UInt8(ascii: "$"), let end = bytes.firstIndex(of: 10),
                  let length = Int(String(decoding: bytes[1..<end], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
                  bytes.count >= end + 1 + length else { return nil }
            return (end + 1)..<(end + 1 + length)
        }
        let received = try exchange(port: port, arguments, timeout: timeout) {
            payloadRange($0) != nil || ($0.first != UInt8(ascii: "$") && $0.contains(10))
        }
        guard let range = payloadRange(received) else {
            throw HarnessError("Redis answered \(arguments.first ?? "?") with \(String(decoding: received, as: UTF8.self))")
        }
        return String(decoding: received[range], as: UTF8.self)
    }

    private static func exchange(port: Int, _ arguments: [String], timeout: TimeInterval,
                                 until complete: ([UInt8]) -> Bool) throws -> [UInt8] {
        let socket = try RawSocket(port: port)
        var request = "*\(arguments.count)\r\n"
        for argument in arguments { request += "$\(argument.utf8.count)\r\n\(argument)\r\n" }
        try socket.send(request)
        let deadline = Date(timeIntervalSinceNow: timeout)
        var received: [UInt8] = []
        while Date() < deadline {
            guard let chunk = socket.receive(timeout: deadline.timeIntervalSinceNow), !chunk.isEmpty else { break }
            received += chunk
            if complete(received) { return received }
        }
        throw HarnessError("no complete reply from Redis on port \(port) to \(arguments.first ?? "?")")
    }
}
