import CRollcallShim
import RollcallEventLoop

extension BrokerServer {
    /// Opens the io_uring of ``BatchedSends`` when `http.batchedSends` is on and the port
    /// is plain WebSocket (with TLS, OpenSSL must frame every write). Where the kernel or its
    /// seccomp filter refuses io_uring, says so once and keeps one `lws_write` per frame.
    func startBatchedSends() {
        guard configuration.http.batchedSends else { return }
        guard configuration.tls.certFile == nil else {
            logger.info("batched sends off: TLS frames are written by OpenSSL through lws_write")
            return
        }
        switch BatchedSends.make() {
        case .success(let batch):
            output.batchedSends = batch
            metrics.batchedSendsEnabled = true
            logger.info("batched sends on: a broadcast's frames go out in one io_uring submission")
        case .failure(let unavailable):
            logger.warning("batched sends off: one lws_write per frame", metadata: ["reason": "\(unavailable)"])
        }
    }

    /// Sends the frames `batch` holds in one submission (``BatchedSends``). A connection
    /// whose socket took its whole frame, or the first part of it with lws keeping the rest
    /// (`LWS_WRITE_RAW`: no second header), is `handedOver`; one whose socket failed is
    /// dropped, as after a failed direct write, once the batch is done (so nothing re-enters
    /// it). The frames' time is `rollcall_last_frame_written_timestamp_seconds`. If the
    /// ring itself fails, it is logged, counted and closed: from then on every frame goes
    /// through `lws_write` (`rollcall_batched_sends_enabled` 0).
    func sendBatched(_ batch: BatchedSends, handedOver: (ConnectionRecord) -> Void) {
        var failed: [ConnectionRecord] = []
        do {
            try batch.send { record, outcome in
                switch outcome {
                case .sent:
                    metrics.batchedSends += 1
                    handedOver(record)
                case .partlySent(let frame, let sent):
                    metrics.batchedSends += 1
                    metrics.batchedSendTails += 1
                    if handTailToLWS(UnsafeBufferPointer(rebasing: frame[sent...]), of: record) {
                        handedOver(record)
                    } else {
                        failed.append(record)
                    }
                case .failed:
                    failed.append(record)
                }
            }
        } catch {
            logger.error("batched sends off: every frame goes through lws_write from now on", metadata: ["error": "\(error)"])
            metrics.batchedSendFailures += 1
            output.batchedSends = nil
            metrics.batchedSendsEnabled = false
        }
        metrics.lastFrameWrittenAt = WallClock.milliseconds
        if output.batchedSends?.firstUnfinishedSend() == true {
            logger.warning("io_uring left sends to full sockets in flight despite MSG_DONTWAIT; they are cancelled and sent by lws instead")
        }
        for record in failed { dropAfterFailedDirectWrite(record) }
    }

    /// Gives lws the part of a frame the socket did not take, as raw bytes: it sends what it
    /// can and keeps the rest ahead of anything else on the connection. False when lws failed.
    private func handTailToLWS(_ tail: UnsafeBufferPointer<UInt8>, of record: ConnectionRecord) -> Bool {
        guard let base = tail.baseAddress else { return true }
        output.writer.reserve(tail.count)
        output.writer.payload.update(from: base, count: tail.count)
        return lws_write(record.wsi, output.writer.payload, tail.count, rollcall_lws_write_raw) >= 0
    }
}
