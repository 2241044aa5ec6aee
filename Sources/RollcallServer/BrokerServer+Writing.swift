import CRollcallShim
import RollcallCore

extension BrokerServer {
    /// `LWS_CALLBACK_SERVER_WRITEABLE`: a due heartbeat ping first, then queued objects joined
    /// with `\n` into frames of at most `limits.maxBatchBytes` (a larger object goes alone),
    /// one `lws_write` per frame, while the socket takes more. A pending close is sent once the
    /// queue is empty and the pipe is clear.
    func writable(_ record: ConnectionRecord) -> Int32 {
        let wsi = record.wsi
        if record.pingDue {
            record.pingDue = false
            if lws_write(wsi, writer.payload, 0, LWS_WRITE_PING) < 0 { return -1 }
            if lws_send_pipe_choked(wsi) != 0 {
                lws_callback_on_writable(wsi)
                return 0
            }
        }
        while !record.outbound.isEmpty {
            let (length, objects) = fillBatch(from: record)
            if lws_write(wsi, writer.payload, length, LWS_WRITE_TEXT) < 0 { return -1 }
            metrics.framesOut += 1
            metrics.objectsOut += objects
            metrics.bytesOut += length
            if lws_send_pipe_choked(wsi) != 0 { break }
        }
        if !record.outbound.isEmpty || (record.pendingClose != nil && lws_send_pipe_choked(wsi) != 0) {
            lws_callback_on_writable(wsi)
            return 0
        }
        if let close = record.pendingClose {
            setCloseReason(wsi, code: close.code, reason: close.reason)
            return -1
        }
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
