import CRollcallShim
import RollcallCore
import RollcallEventLoop

extension BrokerServer {
    /// `LWS_CALLBACK_SERVER_WRITEABLE`: what the lifecycle asks first (a due heartbeat ping,
    /// or the lingering close once our close frame left lws), then queued objects joined
    /// with `\n` into frames of at most `limits.maxBatchBytes` (a larger object goes alone),
    /// one `lws_write` per frame, while the socket takes more. A pending close frame is sent
    /// once the queue is empty and the pipe is clear (``ConnectionLifecycle``).
    func writable(_ record: ConnectionRecord) -> Int32 {
        switch carryOut(record.lifecycle.writable(), for: record) {
        case .carryOn: break
        case .yield: return 0
        case .hangUp: return -1
        }
        return writeQueue(record)
    }

    /// Writes a quiet connection's queue now, outside lws' writable callback, saving the
    /// writable request (an `epoll_ctl`), the loop turn that reports it and lws' `epoll_ctl`
    /// that clears it again — when that is safe; otherwise asks for the callback as before.
    /// Safe means (docs/transport.md, "Writing"): the connection is open with nothing of its
    /// own to send (no due ping, no close under way: those go first, from the callback), lws
    /// holds no unsent tail of an earlier frame (`lws_partial_buffered`: no system call), and
    /// no extension (permessage-deflate) may need writable callbacks to drain. A partial write
    /// is kept by lws, which then asks for the callback itself. A failed write cannot return
    /// -1 to lws from here: the lifecycle drops the connection (``ConnectionLifecycle/writeFailed()``)
    /// and lws closes it on its next turn.
    func writeDirectly(_ record: ConnectionRecord) {
        guard !record.outbound.isEmpty else { return }
        guard isSafeToWriteDirectly(record) else {
            lws_callback_on_writable(record.wsi)
            return
        }
        metrics.directWrites += 1
        if writeQueue(record) < 0 { dropAfterFailedDirectWrite(record) }
    }

    /// The conditions of ``writeDirectly(_:)``: open with no ping due, no unsent tail in lws,
    /// no extension that drains from the writable callback.
    private func isSafeToWriteDirectly(_ record: ConnectionRecord) -> Bool {
        record.lifecycle.state == .open(pingDue: false) && lws_partial_buffered(record.wsi) == 0
            && output.isUncompressed(record.id)
    }

    /// A write outside the callback failed: lws cannot be told with -1, so the lifecycle drops
    /// the connection and lws closes it on its next turn.
    func dropAfterFailedDirectWrite(_ record: ConnectionRecord) {
        logger.debug("direct write failed", metadata: ["connection": "\(record.id)"])
        perform(record.lifecycle.writeFailed(), for: record)
    }

    /// What ``sendAlone(_:)`` did.
    enum SendAloneOutcome {
        /// The frame is with the socket; ``settleSentAlone(_:)`` must follow.
        case sent
        /// Not a lone object on a connection safe to write directly: use ``writeDirectly(_:)``.
        case notAlone
        /// The write failed and the lifecycle dropped the connection.
        case failed
    }

    /// The first pass of a direct write (see `writeDirectWrites`): when the connection is
    /// safe to write directly (as in ``writeDirectly(_:)``) and its queue is exactly one
    /// object, writes that object as one frame and nothing else. The object stays queued
    /// until ``settleSentAlone(_:)``, which the caller runs before anything else can look
    /// at the queue (lws calls nothing back from inside `lws_write`).
    func sendAlone(_ record: ConnectionRecord) -> SendAloneOutcome {
        guard let object = loneObjectToWriteDirectly(record) else { return .notAlone }
        output.writer.reserve(object.count)
        let length = copy(object, at: 0)
        guard lws_write(record.wsi, output.writer.payload, length, LWS_WRITE_TEXT) >= 0 else {
            dropAfterFailedDirectWrite(record)
            return .failed
        }
        return .sent
    }

    /// The object of a queue of exactly one, on a connection safe to write directly (as in
    /// ``writeDirectly(_:)``); nil otherwise.
    func loneObjectToWriteDirectly(_ record: ConnectionRecord) -> [UInt8]? {
        guard record.outbound.count == 1, let object = record.outbound.first, isSafeToWriteDirectly(record) else { return nil }
        return object
    }

    /// Adds `record`'s whole queue to `batch` as one frame (its objects joined with `\n`),
    /// taking the objects off the queue and counting the frame as ``writeQueue(_:)`` does —
    /// when the connection is safe to write directly and the queue fits one frame (at most
    /// `limits.maxBatchBytes`, or a single object of any size). Otherwise returns false and
    /// leaves everything as it was.
    func addWholeQueue(of record: ConnectionRecord, to batch: BatchedSends) -> Bool {
        let objects = record.outbound.count
        let length = record.outbound.byteCount + objects - 1
        guard objects > 0, objects == 1 || length <= configuration.limits.maxBatchBytes,
              isSafeToWriteDirectly(record) else { return false }
        output.histograms.queuedBytesAtWrite.record(Double(record.outbound.byteCount))
        record.lastFrameAt = output.now
        batch.add(record, socket: lws_get_socket_fd(record.wsi), payloadLength: length) { payload in
            _ = moveBatch(from: record, to: payload, limit: length)  // the whole queue: it fits
        }
        countFrame(length: length, objects: objects)
        metrics.directWrites += 1
        return true
    }

    /// The second pass: takes each written object off its queue and counts it, as
    /// ``writeQueue(_:)`` does for a frame of one object. The connections are stamped busy
    /// with the time the sends ended (at most one broadcast later than their write: they stay
    /// busy that much longer). A queue emptied meanwhile (nothing in the first pass can, but a
    /// crash would be the price of being wrong) is skipped.
    func settleSentAlone(_ records: [ConnectionRecord]) {
        guard !records.isEmpty else { return }
        let now = output.now
        for record in records where !record.outbound.isEmpty {
            let length = record.outbound.removeFirst().count
            output.histograms.queuedBytesAtWrite.record(Double(length))
            countFrame(length: length, objects: 1)
            record.lastFrameAt = now
            metrics.directWrites += 1
        }
        metrics.lastFrameWrittenAt = WallClock.milliseconds
    }

    /// Writes the queue (see ``writable(_:)``); returns -1 when the connection must close.
    private func writeQueue(_ record: ConnectionRecord) -> Int32 {
        let wsi = record.wsi
        guard !record.outbound.isEmpty else {
            return carryOut(record.lifecycle.queueFlushed(pipeChoked: lws_send_pipe_choked(wsi) != 0), for: record) == .hangUp ? -1 : 0
        }
        output.histograms.queuedBytesAtWrite.record(Double(record.outbound.byteCount))
        record.lastFrameAt = output.now
        // When the last byte of the last frame left (lws may keep an unsent tail: then a little later).
        defer { metrics.lastFrameWrittenAt = WallClock.milliseconds }
        while !record.outbound.isEmpty {
            let (length, objects) = fillBatch(from: record)
            if lws_write(wsi, output.writer.payload, length, LWS_WRITE_TEXT) < 0 { return -1 }
            countFrame(length: length, objects: objects)
            // Nothing more to write in this callback: skip the choke test, which is a poll()
            // syscall per frame (lws keeps any unsent tail and flushes it before the next
            // writable callback). Measured in BENCHMARKS.md (fanout).
            if record.outbound.isEmpty && !record.lifecycle.hasCloseToSend { return 0 }
            if lws_send_pipe_choked(wsi) != 0 { break }
        }
        if !record.outbound.isEmpty {
            // The socket refused more: what is left is a slow consumer's backlog.
            if output.policy.isSlowConsumer(afterRefusedWriteLeaving: record.outbound.byteCount) {
                cutSlowConsumer(record)
                return 0
            }
            lws_callback_on_writable(wsi)
            return 0
        }
        let actions = record.lifecycle.queueFlushed(pipeChoked: lws_send_pipe_choked(wsi) != 0)
        return carryOut(actions, for: record) == .hangUp ? -1 : 0
    }

    /// Counts one data frame written: its objects, its bytes and its size in the histogram.
    private func countFrame(length: Int, objects: Int) {
        metrics.framesOut += 1
        metrics.objectsOut += objects
        metrics.bytesOut += length
        output.histograms.frameBytes.record(Double(length))
    }

    /// Writes a heartbeat ping. lws 4.1 raises `LWS_CALLBACK_RECEIVE_PONG` only for a pong
    /// with a payload, so the ping carries four bytes (the pong echoes them) for silence
    /// tracking to see it.
    func writePing(_ wsi: OpaquePointer) -> Int32 {
        let payload = UnsafeMutableRawPointer(output.writer.payload)
        for (offset, byte) in "ping".utf8.enumerated() { payload.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self) }
        return lws_write(wsi, output.writer.payload, 4, LWS_WRITE_PING)
    }

    /// Sends a close frame (2-byte big-endian `code`, then at most 123 bytes of `reason`).
    /// Written by us rather than through `lws_close_reason` + return -1, after which lws 4.1
    /// closes the socket right behind the frame.
    func writeCloseFrame(_ wsi: OpaquePointer, code: UInt16, reason: String) -> Int32 {
        let reasonBytes = Array(reason.utf8.prefix(123))
        output.writer.reserve(2 + reasonBytes.count)
        output.writer.payload[0] = UInt8(code >> 8)
        output.writer.payload[1] = UInt8(code & 0xFF)
        let length = 2 + copy(reasonBytes, at: 2)
        return lws_write(wsi, output.writer.payload, length, rollcall_lws_write_close)
    }

    /// Moves the next batch from the queue into the write buffer; returns its length and
    /// how many objects it holds.
    private func fillBatch(from record: ConnectionRecord) -> (Int, Int) {
        let limit = configuration.limits.maxBatchBytes
        output.writer.reserve(max(record.outbound.first?.count ?? 0, limit))
        return moveBatch(from: record, to: output.writer.payload, limit: limit)
    }

    /// Moves queued objects to `destination`, joined with `\n`: the first always, then each
    /// while the frame stays within `limit` bytes. Returns the frame's length and how many
    /// objects it holds. (The write buffer's frames, and a batched flush's whole queue.)
    private func moveBatch(from record: ConnectionRecord, to destination: UnsafeMutablePointer<UInt8>,
                           limit: Int) -> (Int, Int) {
        var length = record.outbound.removeFirst().copy(to: destination)
        var objects = 1
        while let next = record.outbound.first, length + 1 + next.count <= limit {
            destination[length] = UInt8(ascii: "\n")
            length += 1
            length += record.outbound.removeFirst().copy(to: destination + length)
            objects += 1
        }
        return (length, objects)
    }

    private func copy(_ bytes: [UInt8], at offset: Int) -> Int {
        bytes.copy(to: output.writer.payload + offset)
    }
}

extension [UInt8] {
    /// Copies the bytes to `destination`; returns how many.
    func copy(to destination: UnsafeMutablePointer<UInt8>) -> Int {
        withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            destination.update(from: base, count: source.count)
        }
        return count
    }
}
