import CRollcallShim
import RollcallCore

extension BrokerServer {
    /// `LWS_CALLBACK_SERVER_WRITEABLE`: a due heartbeat ping first, then queued objects joined
    /// with `\n` into frames of at most `limits.maxBatchBytes` (a larger object goes alone),
    /// one `lws_write` per frame, while the socket takes more. A pending close is sent once the
    /// queue is empty and the pipe is clear, then the connection lingers (see
    /// ``beginLingering(_:)``).
    func writable(_ record: ConnectionRecord) -> Int32 {
        let wsi = record.wsi
        if record.lingering { return 0 }
        if record.closeFrameSent { return beginLingering(record) }
        if record.pingDue {
            record.pingDue = false
            // lws 4.1 raises LWS_CALLBACK_RECEIVE_PONG only for a pong with a payload, so the
            // ping carries four bytes (the pong echoes them) for silence tracking to see it.
            let payload = UnsafeMutableRawPointer(writer.payload)
            for (offset, byte) in "ping".utf8.enumerated() { payload.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self) }
            if lws_write(wsi, writer.payload, 4, LWS_WRITE_PING) < 0 { return -1 }
            if lws_send_pipe_choked(wsi) != 0 {
                lws_callback_on_writable(wsi)
                return 0
            }
        }
        if !record.outbound.isEmpty { exposition.histograms.queuedBytesAtWrite.record(Double(record.outbound.byteCount)) }
        while !record.outbound.isEmpty {
            let (length, objects) = fillBatch(from: record)
            if lws_write(wsi, writer.payload, length, LWS_WRITE_TEXT) < 0 { return -1 }
            metrics.framesOut += 1
            metrics.objectsOut += objects
            metrics.bytesOut += length
            exposition.histograms.frameBytes.record(Double(length))
            // Nothing more to write in this callback: skip the choke test, which is a poll()
            // syscall per frame (lws keeps any unsent tail and flushes it before the next
            // writable callback). Measured in BENCHMARKS.md (fanout).
            if record.outbound.isEmpty && record.pendingClose == nil { return 0 }
            if lws_send_pipe_choked(wsi) != 0 { break }
        }
        if !record.outbound.isEmpty || (record.pendingClose != nil && lws_send_pipe_choked(wsi) != 0) {
            lws_callback_on_writable(wsi)
            return 0
        }
        if let close = record.pendingClose {
            if writeCloseFrame(wsi, code: close.code, reason: close.reason) < 0 { return -1 }
            record.closeFrameSent = true
            if lws_send_pipe_choked(wsi) != 0 {
                // lws keeps what the kernel did not take and calls back once it is flushed.
                lws_callback_on_writable(wsi)
                return 0
            }
            return beginLingering(record)
        }
        return 0
    }

    /// Sends a close frame (2-byte big-endian `code`, then at most 123 bytes of `reason`).
    /// Written by us rather than through `lws_close_reason` + return -1, after which lws 4.1
    /// closes the socket right behind the frame.
    private func writeCloseFrame(_ wsi: OpaquePointer, code: UInt16, reason: String) -> Int32 {
        let reasonBytes = Array(reason.utf8.prefix(123))
        writer.reserve(2 + reasonBytes.count)
        writer.payload[0] = UInt8(code >> 8)
        writer.payload[1] = UInt8(code & 0xFF)
        let length = 2 + copy(reasonBytes, at: 2)
        return lws_write(wsi, writer.payload, length, rollcall_lws_write_close)
    }

    /// The close frame is in the kernel: half-close the socket and keep the connection open,
    /// reading and discarding, until the peer closes (EOF or its close frame) or
    /// ``BrokerServer/lingerSeconds`` pass. Closing with unread input would make the kernel
    /// answer with a reset, which can destroy the close frame before the peer reads it.
    private func beginLingering(_ record: ConnectionRecord) -> Int32 {
        record.lingering = true
        if rollcall_half_close(record.wsi) != 0 { return -1 }
        lws_set_timeout(record.wsi, PENDING_TIMEOUT_USER_OK, Self.lingerSeconds)
        return 0
    }

    /// Moves the next batch from the queue into the write buffer; returns its length and
    /// how many objects it holds.
    private func fillBatch(from record: ConnectionRecord) -> (Int, Int) {
        let limit = configuration.limits.maxBatchBytes
        let first = record.outbound.removeFirst()
        writer.reserve(max(first.count, limit))
        var length = copy(first, at: 0)
        var objects = 1
        while let next = record.outbound.first, length + 1 + next.count <= limit {
            writer.payload[length] = UInt8(ascii: "\n")
            length += 1
            length += copy(record.outbound.removeFirst(), at: length)
            objects += 1
        }
        return (length, objects)
    }

    private func copy(_ bytes: [UInt8], at offset: Int) -> Int {
        bytes.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            (writer.payload + offset).update(from: base, count: source.count)
        }
        return bytes.count
    }
}
