import Foundation

/// A hand-made WebSocket client that shows the broker's frames one by one (the client
/// library hides frame boundaries), for batching and queue-limit tests. It answers nothing.
final class FrameClient {
    let socket: RawSocket
    private var buffer: [UInt8] = []
    /// The close code, once a close frame arrived.
    private(set) var closeCode: UInt16?

    /// Connects and completes the upgrade on `/v1`; throws unless the answer is 101.
    init(port: Int) throws {
        socket = try RawSocket(port: port)
        try socket.send(
            "GET /v1 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
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

    /// One masked text frame per string, all written with one `send` (pipelined).
    func send(_ texts: [String]) throws {
        var bytes: [UInt8] = []
        for text in texts {
            let payload = Array(text.utf8)
            bytes.append(0x81)
            if payload.count < 126 { bytes.append(0x80 | UInt8(payload.count)) }
            else if payload.count <= 0xffff { bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)] }
            else { bytes.append(0x80 | 127); bytes += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) } }
            let mask: [UInt8] = [0x21, 0x43, 0x65, 0x87]
            bytes += mask
            bytes += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        }
        try socket.send(bytes)
    }

    /// Reads text frames until `objects` JSON objects (frames split on `\n`) arrived, the peer
    /// closed, or `timeout` passed. Returns the frames' payloads as received.
    func readFrames(objects: Int, timeout: TimeInterval = 10) -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var frames: [String] = []
        var count = 0
        while count < objects {
            if let (opcode, payload) = nextFrame() {
                if opcode == 0x1 {
                    let text = String(decoding: payload, as: UTF8.self)
                    frames.append(text)
                    count += text.split(separator: "\n").count
                } else if opcode == 0x8 {
                    closeCode = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
                    break
                }
                continue
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0, let chunk = socket.receive(timeout: remaining), !chunk.isEmpty else { break }
            buffer += chunk
        }
        return frames
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
