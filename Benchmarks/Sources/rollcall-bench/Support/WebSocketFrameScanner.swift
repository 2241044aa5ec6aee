import CBenchZlib
import Foundation

/// Splits a server's WebSocket byte stream (RFC 6455, unmasked frames) into messages and each
/// text message into its `\n`-separated objects, chunk by chunk as the socket delivers them.
/// A frame that lies whole in one chunk is scanned where it lies (no copy); one cut across
/// reads or fragments is gathered first. Pings are answered with pongs. With permessage-deflate
/// negotiated (``inflater`` set), a message whose first frame has RSV1 set is inflated as it
/// arrives and scanned once whole.
struct WebSocketFrameScanner {
    private var header: [UInt8] = []
    private var inFrame = false
    private var opcode: UInt8 = 0
    private var isFinal = false
    /// Payload bytes of the current frame not read yet.
    private var remaining = 0
    /// A text message being gathered (released after each message: 10,000 idle clients keep nothing).
    private var message: [UInt8] = []
    private var control: [UInt8] = []
    /// The connection's raw-inflate stream when permessage-deflate was negotiated (owned by
    /// the ``RawWebSocket``).
    var inflater: OpaquePointer?
    /// The message being received is compressed (RSV1 on its first frame).
    private var compressed = false

    /// Scans one chunk; returns true when the connection ended (a close frame).
    mutating func scan(_ chunk: UnsafeRawBufferPointer, connection: RawWebSocket) -> Bool {
        var index = 0
        let count = chunk.count
        while index < count {
            if !inFrame {
                header.append(chunk[index])
                index += 1
                guard header.count >= 2 else { continue }
                let short = Int(header[1] & 0x7F)
                let needed = 2 + (short == 126 ? 2 : short == 127 ? 8 : 0)
                guard header.count == needed else { continue }
                let frameOpcode = header[0] & 0x0F
                if frameOpcode != 0 && frameOpcode < 0x8 { compressed = header[0] & 0x40 != 0 }
                opcode = frameOpcode
                isFinal = header[0] & 0x80 != 0
                remaining = short < 126 ? short : header[2...].reduce(0) { $0 << 8 | Int($1) }
                header.removeAll(keepingCapacity: true)
                inFrame = true
                if remaining > 0 { continue }
            } else {
                let take = min(remaining, count - index)
                let slice = UnsafeRawBufferPointer(rebasing: chunk[index..<(index + take)])
                index += take
                remaining -= take
                if opcode >= 0x8 {
                    control.append(contentsOf: slice)
                } else if compressed, let inflater {
                    guard bench_inflater_feed(inflater, slice.baseAddress, slice.count) == 0 else {
                        connection.endReason = "inflate error"
                        return true
                    }
                } else if message.isEmpty && remaining == 0 && isFinal {
                    // The whole message is in this chunk: scan it in place.
                    connection.messagesReceived += 1
                    if let onPayload = connection.onPayload { onPayload(slice) } else { Self.lines(slice, connection.onLine) }
                    inFrame = false
                    continue
                } else {
                    message.append(contentsOf: slice)
                }
                guard remaining == 0 else { continue }
            }
            // The frame is complete.
            inFrame = false
            switch opcode {
            case 0x8:
                connection.endReason = control.count >= 2 ? "close \(Int(control[0]) << 8 | Int(control[1]))" : "close"
                return true
            case 0x9:
                connection.send(opcode: 0xA, payload: control)
                control.removeAll(keepingCapacity: true)
            case 0xA:
                control.removeAll(keepingCapacity: true)
            default:
                if isFinal && compressed, let inflater {
                    connection.messagesReceived += 1
                    var length = 0
                    guard let whole = bench_inflater_finish(inflater, &length) else {
                        connection.endReason = "inflate error"
                        return true
                    }
                    connection.bytesInflated += length
                    let payload = UnsafeRawBufferPointer(start: whole, count: length)
                    if let onPayload = connection.onPayload { onPayload(payload) } else { Self.lines(payload, connection.onLine) }
                    bench_inflater_reset(inflater)
                    compressed = false
                } else if isFinal {
                    connection.messagesReceived += 1
                    message.withUnsafeBytes {
                        if let onPayload = connection.onPayload { onPayload($0) } else { Self.lines($0, connection.onLine) }
                    }
                    message = []
                }
            }
        }
        return false
    }

    /// Calls `body` for each `\n`-separated part of `payload` (empty parts skipped).
    static func lines(_ payload: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        guard let base = payload.baseAddress else { return }
        var start = 0
        while start < payload.count {
            let rest = payload.count - start
            let end: Int
            if let found = memchr(base + start, 10, rest) {
                end = base.distance(to: UnsafeRawPointer(found))
            } else {
                end = payload.count
            }
            if end > start { body(UnsafeRawBufferPointer(rebasing: payload[start..<end])) }
            start = end + 1
        }
    }
}
