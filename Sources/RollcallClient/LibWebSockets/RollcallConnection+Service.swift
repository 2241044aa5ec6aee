// libwebsockets: Linux, with the package's `LibWebSockets` trait (on by default).
#if LibWebSockets && os(Linux)
import CLibWebSockets
import CRollcallShim
import Foundation
import RollcallProtocol

/// The service-thread half of a connection: everything here runs on the runtime's thread.
extension RollcallConnection {
    /// Starts the lws client connection (called by the runtime when a handshake slot is free).
    func serviceConnect() {
        guard let context = runtime.context else {
            service { $0.failed("client runtime stopped") }
            return
        }
        func keep(_ text: String) -> UnsafeMutablePointer<CChar> {
            let pointer = strdup(text)!
            cStrings.append(pointer)
            return pointer
        }
        var info = lws_client_connect_info()
        info.context = context
        info.address = UnsafePointer(keep(url.host))
        info.port = Int32(url.port)
        info.path = UnsafePointer(keep(url.path))
        info.host = UnsafePointer(keep(url.hostHeader))
        if let origin { info.origin = UnsafePointer(keep(origin)) }
        if let subprotocol { info.protocol = UnsafePointer(keep(subprotocol)) }
        info.local_protocol_name = UnsafePointer(runtime.protocolName)
        if url.secure {
            var flags = LCCSCF_USE_SSL.rawValue
            if allowSelfSignedCertificate {
                flags |= LCCSCF_ALLOW_SELFSIGNED.rawValue | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK.rawValue
            }
            info.ssl_connection = Int32(flags)
        }
        info.userdata = Unmanaged.passRetained(self).toOpaque()
        lwsRetained = true
        let created = lws_client_connect_via_info(&info)
        if created == nil {
            if lwsRetained {
                lwsRetained = false
                Unmanaged.passUnretained(self).release()
            }
            service { $0.failed("cannot connect to \(url)") }
        }
    }

    /// `LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH`: the upgrade response's headers are still
    /// there (lws drops them before `ESTABLISHED`); keep the extensions the server accepted.
    func serviceUpgradeAccepted(_ wsi: OpaquePointer) {
        var buffer = [CChar](repeating: 0, count: 256)
        let length = rollcall_client_accepted_extensions(wsi, &buffer, Int32(buffer.count))
        let accepted = length > 0 ? String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        cond.withLock { acceptedExtensions = accepted }
    }

    /// `LWS_CALLBACK_CLIENT_ESTABLISHED`.
    func serviceEstablished(_ wsi: OpaquePointer) {
        self.wsi = wsi
        cond.lock()
        let actions = lifecycle.established()
        guard actions.contains(.reportOpen) else { cond.unlock(); return }
        let pending = !outgoing.isEmpty
        writeScheduled = false
        let handler = openHandler
        cond.broadcast()
        cond.unlock()
        if actions.contains(.endHandshake) { runtime.serviceHandshakeEnded() }
        if pending { lws_callback_on_writable(wsi) }
        handler?()
    }

    /// A `WRITEABLE` request from another thread.
    func serviceWantsWrite() {
        cond.lock()
        writeScheduled = false
        cond.unlock()
        if let wsi { lws_callback_on_writable(wsi) }
    }

    /// `LWS_CALLBACK_CLIENT_WRITEABLE`: writes one queued item. Returns -1 to close.
    func serviceWriteable(_ wsi: OpaquePointer) -> Int32 {
        cond.lock()
        guard let item = outgoing.popFirst() else { cond.unlock(); return 0 }
        let more = !outgoing.isEmpty
        switch item {
        case .text, .binary, .fragment: counts.framesSent += 1
        case .close, .drop: break
        }
        cond.unlock()

        switch item {
        case .text(let bytes):
            if write(wsi, bytes, LWS_WRITE_TEXT.rawValue) < 0 { return -1 }
        case .binary(let bytes):
            if write(wsi, bytes, LWS_WRITE_BINARY.rawValue) < 0 { return -1 }
        case .fragment(let bytes, let binary, let first, let fin):
            var mode = first ? (binary ? LWS_WRITE_BINARY.rawValue : LWS_WRITE_TEXT.rawValue) : LWS_WRITE_CONTINUATION.rawValue
            if !fin { mode |= LWS_WRITE_NO_FIN.rawValue }
            if write(wsi, bytes, mode) < 0 { return -1 }
        case .close(let code, let reason):
            cond.withLock { lifecycle.closeFrameWritten(code: code, reason: reason) }
            var reasonBytes = Array(reason.utf8.prefix(123))
            reasonBytes.withUnsafeMutableBufferPointer { buffer in
                lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code)), buffer.baseAddress, buffer.count)
            }
            return -1
        case .drop:
            cond.withLock { lifecycle.dropWritten() }
            _ = rollcall_client_drop_socket(wsi)
            return 0
        }
        if more { lws_callback_on_writable(wsi) }
        return 0
    }

    private func write(_ wsi: OpaquePointer, _ bytes: [UInt8], _ mode: UInt32) -> Int32 {
        let pre = Int(rollcall_lws_pre)
        var buffer = [UInt8](repeating: 0, count: pre + bytes.count)
        buffer.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                if let base = source.baseAddress, !source.isEmpty {
                    (target.baseAddress! + pre).update(from: base, count: source.count)
                }
            }
        }
        let written = buffer.withUnsafeMutableBufferPointer { target in
            lws_write(wsi, target.baseAddress! + pre, bytes.count, lws_write_protocol(rawValue: mode))
        }
        return written < 0 ? -1 : 0
    }

    /// `LWS_CALLBACK_CLIENT_RECEIVE`: reassembles a message, then splits it on `\n`.
    func serviceReceive(_ wsi: OpaquePointer, _ data: UnsafeRawPointer?, _ length: Int) {
        if let data, length > 0 {
            rxAssembly.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
        }
        guard lws_is_final_fragment(wsi) != 0, lws_remaining_packet_payload(wsi) == 0 else { return }
        let message = rxAssembly
        rxAssembly.removeAll(keepingCapacity: rxAssembly.capacity <= 65536)
        deliver(message: message)
    }

    /// Splits one received message into objects and hands each to its consumer in order.
    func deliver(message: [UInt8]) {
        if let handler = cond.withLock({ () -> (([UInt8]) -> Void)? in
            guard let handler = messageHandler else { return nil }
            counts.framesReceived += 1
            counts.bytesReceived += message.count
            return handler
        }) {
            handler(message)
            return
        }
        var parsed: [JSONObject] = []
        var malformed = 0
        var rawEvents = 0
        let rawHandler = cond.withLock { rawEventHandler }
        // memchr rather than the generic `split`, which walks byte by byte through witness
        // tables in debug builds — the tests' fan-out runs are bound by this loop.
        message.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var start = 0
            while start < buffer.count {
                var end = buffer.count
                if let found = memchr(base + start, 0x0A, buffer.count - start) {
                    end = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                }
                if end > start, let rawHandler, Self.isEventLine(base + start, end - start) {
                    rawEvents += 1
                    rawHandler(UnsafeRawBufferPointer(start: base + start, count: end - start))
                } else if end > start {
                    if case .object(let object)? = try? JSONParser.parse(UnsafeBufferPointer(rebasing: buffer[start..<end])) {
                        parsed.append(object)
                    } else {
                        malformed += 1
                    }
                }
                start = end + 1
            }
        }
        var actions: [() -> Void] = []
        cond.lock()
        counts.framesReceived += 1
        counts.bytesReceived += message.count
        counts.objectsReceived += parsed.count + rawEvents
        counts.malformedObjects += malformed
        if recordTranscript { transcriptObjects.append(contentsOf: parsed) }
        for object in parsed {
            if object["event"] != nil {
                let event = Event(object)
                if let handler = eventHandler { actions.append { handler(event) } } else { events.append(event) }
            } else {
                let reply = Reply(object)
                let key = Self.key(reply.id)
                if let callback = replyCallbacks.removeValue(forKey: key) {
                    actions.append { callback(reply) }
                } else if awaited.contains(key) {
                    arrived[key] = reply
                } else if let handler = replyHandler {
                    actions.append { handler(reply) }
                } else {
                    unmatchedReplies.append(reply)
                }
            }
        }
        cond.broadcast()
        cond.unlock()
        for action in actions { action() }
    }

    private static let eventPrefix = Array(#"{"event":"#.utf8)

    /// True when the line starts with `{"event":` (the broker writes `event` first).
    static func isEventLine(_ start: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard count >= eventPrefix.count else { return false }
        return eventPrefix.withUnsafeBufferPointer { memcmp(start, $0.baseAddress!, $0.count) == 0 }
    }

    /// `LWS_CALLBACK_WS_PEER_INITIATED_CLOSE`: the payload is a big-endian code and reason.
    func servicePeerClose(_ data: UnsafeRawPointer?, _ length: Int) {
        guard let data, length >= 2 else {
            cond.withLock { lifecycle.peerClosed(code: nil, reason: "") }
            return
        }
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        let code = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let reason = String(decoding: bytes[2...], as: UTF8.self)
        cond.withLock { lifecycle.peerClosed(code: code, reason: reason) }
    }

    /// `LWS_CALLBACK_CLIENT_CONNECTION_ERROR`.
    func serviceConnectionError(_ message: String) {
        service { $0.failed(message) }
    }

    /// `LWS_CALLBACK_CLIENT_CLOSED`: the broker's close, ours, or a drop (``SocketLifecycle/socketClosed()``).
    func serviceClosed() {
        service { $0.socketClosed() }
    }

    /// `LWS_CALLBACK_WSI_DESTROY`: the last callback for this wsi.
    func serviceDestroyed() {
        service { $0.destroyed() }
        wsi = nil
        if lwsRetained {
            lwsRetained = false
            Unmanaged.passUnretained(self).release()
        }
    }

    /// Moves the lifecycle (under `cond`) and carries out what it returns.
    func service(_ input: (inout SocketLifecycle) -> [SocketLifecycle.Action]) {
        let actions = cond.withLock { input(&lifecycle) }
        for action in actions {
            switch action {
            case .endHandshake:
                runtime.serviceHandshakeEnded()
            case .finish(let info, let connectError):
                finish(info, connectError: connectError)
            case .beginHandshake, .reportOpen:
                break // start() and serviceEstablished() act on these themselves
            }
        }
    }

    /// The end, once: wakes every waiter and calls the close handler.
    private func finish(_ info: CloseInfo, connectError: String?) {
        cond.lock()
        if let connectError, self.connectError == nil { self.connectError = connectError }
        outgoing.removeAll()
        replyCallbacks.removeAll()
        let handler = closeHandler
        cond.broadcast()
        cond.unlock()
        handler?(info)
    }
}
#endif
