import Foundation

/// A blocking connection of the bench's own to a loopback Redis, for the floors of the cost
/// batches: a batch of commands goes out in one `write` (as a node writes the commands of one
/// loop turn), then every reply is read. Not the broker's client: only what the bench needs.
final class RedisPipe {
    /// One RESP reply.
    indirect enum Reply: Equatable {
        case simple(String)
        case error(String)
        case integer(Int)
        case bulk([UInt8]?)
        case array([Reply]?)

        /// The text of a simple or bulk reply.
        var text: String? {
            switch self {
            case .simple(let text): text
            case .bulk(let bytes?): String(decoding: bytes, as: UTF8.self)
            default: nil
            }
        }
    }

    private let fd: Int32
    private var buffer: [UInt8] = []
    private var readOffset = 0

    /// Connects to 127.0.0.1:`port`.
    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RedisServerProcess.RedisError(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw RedisServerProcess.RedisError(description: "connect to 127.0.0.1:\(port) failed")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends `commands` in one write and returns their replies, in order.
    func call(_ commands: [[[UInt8]]]) throws -> [Reply] {
        var out: [UInt8] = []
        for command in commands { Self.encode(command, into: &out) }
        try out.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let written = write(fd, raw.baseAddress! + sent, raw.count - sent)
                guard written > 0 else { throw RedisServerProcess.RedisError(description: "write to Redis failed") }
                sent += written
            }
        }
        var replies: [Reply] = []
        replies.reserveCapacity(commands.count)
        while replies.count < commands.count {
            if let reply = Self.parse(buffer, at: &readOffset) {
                replies.append(reply)
                continue
            }
            if readOffset > 0 {
                buffer.removeFirst(readOffset)
                readOffset = 0
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            guard count > 0 else { throw RedisServerProcess.RedisError(description: "Redis closed the connection") }
            buffer += chunk[0..<count]
        }
        return replies
    }

    /// One command of text arguments.
    func call(_ arguments: String...) throws -> Reply {
        try call([arguments.map { Array($0.utf8) }])[0]
    }

    /// `*<n>\r\n` then `$<len>\r\n<argument>\r\n` per argument.
    static func encode(_ command: [[UInt8]], into out: inout [UInt8]) {
        out += Array("*\(command.count)\r\n".utf8)
        for argument in command {
            out += Array("$\(argument.count)\r\n".utf8)
            out += argument
            out += [13, 10]
        }
    }

    /// The reply that starts at `offset` (advanced past it), or nil when it is not all there yet
    /// (`offset` unchanged).
    static func parse(_ bytes: [UInt8], at offset: inout Int) -> Reply? {
        var cursor = offset
        guard let reply = parseOne(bytes, &cursor) else { return nil }
        offset = cursor
        return reply
    }

    private static func parseOne(_ bytes: [UInt8], _ cursor: inout Int) -> Reply? {
        guard cursor < bytes.count, let line = lineEnd(bytes, from: cursor + 1) else { return nil }
        let kind = bytes[cursor]
        let text = String(decoding: bytes[(cursor + 1)..<line], as: UTF8.self)
        var next = line + 2
        let reply: Reply
        switch kind {
        case UInt8(ascii: "+"): reply = .simple(text)
        case UInt8(ascii: "-"): reply = .error(text)
        case UInt8(ascii: ":"): reply = .integer(Int(text) ?? 0)
        case UInt8(ascii: "$"):
            let length = Int(text) ?? -1
            if length < 0 {
                reply = .bulk(nil)
            } else {
                guard next + length + 2 <= bytes.count else { return nil }
                reply = .bulk(Array(bytes[next..<(next + length)]))
                next += length + 2
            }
        case UInt8(ascii: "*"):
            let count = Int(text) ?? -1
            if count < 0 {
                reply = .array(nil)
            } else {
                var elements: [Reply] = []
                for _ in 0..<count {
                    guard let element = parseOne(bytes, &next) else { return nil }
                    elements.append(element)
                }
                reply = .array(elements)
            }
        default:
            reply = .error("unreadable reply byte \(kind)")
        }
        cursor = next
        return reply
    }

    /// The index of the `\r` of the line that starts at `from`, if the line is complete.
    private static func lineEnd(_ bytes: [UInt8], from: Int) -> Int? {
        var index = from
        while index + 1 < bytes.count {
            if bytes[index] == 13 && bytes[index + 1] == 10 { return index }
            index += 1
        }
        return nil
    }
}
