import CRollcallShim
import RollcallCore
import RollcallProtocol
import RollcallEventLoop

extension BrokerServer {
    // MARK: - Upgrade

    /// Accepts an upgrade only on `/v1` or `/ws`, from an allowed `Origin` (none is fine),
    /// while accepting. A refusal answers with a complete HTTP/1.1 response (404, 403, 503)
    /// and hangs up.
    func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
        guard loop.phase == .accepting else { return refuseUpgrade(wsi, status: 503) }
        guard !gate.refusesForCap(&metrics) else { return refuseUpgrade(wsi, status: 503, body: ConnectionGate.refusalBody) }
        let path = header(wsi, WSI_TOKEN_GET_URI) ?? ""
        guard path == "/v1" || path == "/ws" else { return refuseUpgrade(wsi, status: 404) }
        if let origin = header(wsi, WSI_TOKEN_ORIGIN), !isAllowed(origin: origin) {
            logger.info("upgrade refused: origin not allowed", metadata: ["origin": "\(origin)"])
            return refuseUpgrade(wsi, status: 403)
        }
        return 0
    }

    private func refuseUpgrade(_ wsi: OpaquePointer, status: UInt32, body: String? = nil) -> Int32 {
        metrics.upgradesRejected += 1
        metrics.httpResponses[Int(status), default: 0] += 1
        let (phrase, standardBody): (String, String) = switch status {
        case 403: ("Forbidden", "origin not allowed\n")
        case 404: ("Not Found", "WebSocket endpoints are /v1 and /ws\n")
        default: ("Service Unavailable", "shutting down\n")
        }
        _ = rollcall_http_refuse(wsi, status, phrase, body ?? standardBody)
        return -1
    }

    private func isAllowed(origin: String) -> Bool {
        let allowed = configuration.http.allowedOrigins
        return allowed.contains("*") || allowed.contains(origin)
    }

    /// A request header, or nil when absent (or longer than 1 KiB).
    func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer in
            let length = rollcall_header(wsi, token, buffer.baseAddress, Int32(buffer.count))
            guard length >= 0 else { return nil }
            return String(cString: buffer.baseAddress!)
        }
    }

    // MARK: - Open

    func established(_ wsi: OpaquePointer, _ pss: UnsafeMutablePointer<rollcall_pss_t>) -> Int32 {
        let key = records.newKey()
        let id = ConnectionID(key)
        pss.pointee.key = key
        let now = MonotonicClock.now
        let record = ConnectionRecord(id: id, wsi: wsi, now: now)
        metrics.connectionsTotal += 1
        rollcall_cap_send_buffer(wsi, Self.socketSendBufferBytes)
        applyDeflateOptions(wsi)
        // lws accepts permessage-deflate from a client that offers it: such a connection is
        // only written from the writable callback (see ``writeDirectly(_:)``).
        if configuration.http.permessageDeflate, header(wsi, WSI_TOKEN_EXTENSIONS) != nil {
            output.compressingConnections.insert(id)
        }
        records.insert(record, firstHeartbeatCheckAt: record.lifecycle.nextHeartbeatCheck(loop.heartbeat))
        feed(.opened(id))
        return 0
    }

    // MARK: - Receive

    /// One chunk of an incoming frame: reassembled up to `limits.maxFrameBytes` (the lws rx
    /// buffer is only a chunk size, see ``MessageAssembler``); a complete message goes to the
    /// core, a broken frame rule closes the connection.
    func received(_ record: ConnectionRecord, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        record.lifecycle.heard(at: MonotonicClock.now)
        guard record.lifecycle.isReading else { return 0 }
        let wsi = record.wsi
        let chunk = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
        let outcome = record.assembler.take(
            chunk, isBinary: lws_frame_is_binary(wsi) != 0, remainingInFrame: Int(lws_remaining_packet_payload(wsi)),
            isFinalFragment: lws_is_final_fragment(wsi) != 0, limit: configuration.limits.maxFrameBytes)
        switch outcome {
        case .incomplete:
            return 0
        case .message(let message):
            metrics.framesIn += 1
            metrics.bytesIn += message.count
            feed(.received(record.id, message))
            return 0
        case .fault(let code, let reason):
            return closeForProtocolFault(record, code, reason: reason)
        }
    }

    /// Closes the connection whose callback this is, for a protocol fault (1003, 1007, 1009):
    /// the session ends as if the client had sent a close frame (see
    /// ``ConnectionLifecycle/protocolFault(_:reason:)``). Returns 0 for lws.
    private func closeForProtocolFault(_ record: ConnectionRecord, _ code: CloseCode, reason: String) -> Int32 {
        logger.debug("protocol fault", metadata: ["connection": "\(record.id)", "code": "\(code.rawValue)"])
        metrics.protocolCloses[code.rawValue, default: 0] += 1
        return perform(record.lifecycle.protocolFault(code, reason: reason), for: record)
    }

    // MARK: - Close

    /// The connection is gone (`LWS_CALLBACK_CLOSED`). Tells the core how, unless it already knows.
    func closed(_ record: ConnectionRecord) {
        records.remove(record.id)
        output.compressingConnections.remove(record.id)
        let actions = record.lifecycle.socketClosed()
        if let kind = record.lifecycle.endKind {
            metrics.connectionEnds[kind.rawValue, default: 0] += 1
        }
        perform(actions, for: record)
    }

    /// `LWS_CALLBACK_WS_PEER_INITIATED_CLOSE`. Returns -1 when lws must close now (the peer
    /// answered our close frame while we lingered), else 0 (lws answers the close frame).
    func peerSentClose(_ record: ConnectionRecord) -> Int32 {
        perform(record.lifecycle.peerSentClose(), for: record)
    }
}
